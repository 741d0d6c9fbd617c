package kube

// RealNodeKey is the lab's real node's (lab.realNode) label and NoSchedule taint key, which keep
// every pod off it but those meant for it (the workload image it holds is images.RealNodeWorkload).
const RealNodeKey = "brakebench.dev/real-node"

// RealNodePodSpec adds to a pod spec (unstructured) what places it on the real node and runs the
// image it already holds: the node selector, the toleration, imagePullPolicy Never.
func RealNodePodSpec(spec map[string]any) {
	spec["nodeSelector"] = map[string]any{RealNodeKey: "true"}
	spec["tolerations"] = []any{map[string]any{"key": RealNodeKey, "operator": "Equal", "value": "true", "effect": "NoSchedule"}}
	if cs, ok := spec["containers"].([]any); ok {
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				m["imagePullPolicy"] = "Never"
			}
		}
	}
}
