package config

import (
	"strings"
	"testing"
)

// Free text with a grammar is checked with its parser, and the error names where the value came
// from and the key, on one short line.
func TestNameKeys(t *testing.T) {
	file := writeFile(t, "workload:\n  image: \"registry.k8s.io/pause:3.10\\t\"\n")
	long := strings.Repeat("a", 100000)
	cases := []struct {
		name string
		l    Loader
		want string // "" when valid; else a substring of the error
	}{
		{"an image with a tab, from a file", Loader{Files: []string{file}}, file + `:2: key "workload.image": expected an image reference like registry.k8s.io/pause:3.10 (tag can only contain the characters`},
		{"an image with a newline", Loader{Sets: []string{"workload.image=pause\nx"}}, `--set: key "workload.image": expected an image reference like registry.k8s.io/pause:3.10 (repository can only contain the characters`},
		{"a 100000-character image", Loader{Sets: []string{"workload.image=" + long}}, `key "workload.image": expected an image reference like registry.k8s.io/pause:3.10 (repository must be between 1 and 255 characters in length), got "aaaa`},
		{"a capitalised image, from the environment", Loader{Env: []string{"BRAKEBENCH_WORKLOAD_IMAGE=Pause"}}, `env BRAKEBENCH_WORKLOAD_IMAGE: key "workload.image": expected an image reference`},
		{"a runner image with a space", Loader{Sets: []string{"loadgen.runnerImage=brakebench :dev"}}, `key "loadgen.runnerImage": expected an image reference`},
		{"a kind node image with a bad digest", Loader{Sets: []string{"cluster.kindImage=kindest/node@sha256:abc"}}, `key "cluster.kindImage": expected an image reference like registry.k8s.io/pause:3.10 (invalid checksum digest length), got "kindest/node@sha256:abc"`},
		{"a lab name of 64 characters", Loader{Sets: []string{"lab.name=" + strings.Repeat("a", 64)}}, `key "lab.name": expected a lower-case DNS label (must be no more than 63 characters)`},
		{"a kind cluster name with capitals", Loader{Sets: []string{"cluster.kindName=Bench"}}, `key "cluster.kindName": expected a kind cluster name (a lower-case DNS-1123 subdomain) (a lowercase RFC 1123 subdomain must consist of`},
		{"a controller namespace with a dot", Loader{Sets: []string{"controller.namespace=agent.sandbox"}}, `key "controller.namespace": expected a namespace (a lower-case DNS-1123 label) (must not contain dots), got "agent.sandbox"`},
		{"an empty controller namespace", Loader{Sets: []string{"controller.namespace="}}, `key "controller.namespace": expected a namespace`},
		{"a controller Deployment with a tab", Loader{Sets: []string{"controller.deployment=agent\tsandbox"}}, `key "controller.deployment": expected a Deployment name (a lower-case DNS-1123 subdomain) (`},
		{"a Kueue namespace of 100000 characters", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.kueueNamespace=" + long}}, `key "gangQuota.kueueNamespace": expected a namespace (a lower-case DNS-1123 label) (must be no more than 63 characters), got "aaaa`},
		{"a Kueue Deployment with capitals", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.kueueDeployment=Kueue"}}, `key "gangQuota.kueueDeployment": expected a Deployment name`},
		{"a node label value with a space", Loader{Sets: []string{"lab.nodes.labels=zone=a b"}}, `key "lab.nodes.labels": expected key=value items with a Kubernetes label key and value (a valid label must be`},
		{"a node label key with a space", Loader{Sets: []string{"lab.nodes.labels=my zone=a"}}, `key "lab.nodes.labels": expected key=value items with a Kubernetes label key and value (name part must consist of`},
		{"an exporter URL without a scheme", Loader{Suite: "pool-autoscaling", Sets: []string{"poolAutoscaling.exporterURL=brakebench-demand:8080/demand"}}, `key "poolAutoscaling.exporterURL": expected an http(s) URL like http://brakebench-demand.brakebench.svc:8080/demand, got "brakebench-demand:8080/demand"`},
		{"an exporter URL with a newline", Loader{Suite: "pool-autoscaling", Sets: []string{"poolAutoscaling.exporterURL=http://x:8080/\n"}}, `key "poolAutoscaling.exporterURL": expected an http(s) URL`},
		{"an apiserver flag with a space in its name", Loader{Sets: []string{"lab.apiserverArgs=max requests=800"}}, `key "lab.apiserverArgs": expected kube-apiserver flags like max-requests-inflight=800 (a lower-case flag name, = and a value without control characters), got "max requests=800"`},
		{"an apiserver flag value with a newline", Loader{Sets: []string{"lab.apiserverArgs=v=1\n--x"}}, `key "lab.apiserverArgs": expected kube-apiserver flags like max-requests-inflight=800`},
		{"good values", Loader{Sets: []string{"workload.image=ghcr.io/x/y:v1", "lab.nodes.labels=topology.kubernetes.io/zone=a,empty=", "cluster.kindName=my.bench", "poolAutoscaling.exporterURL=https://x.example:8443/demand", "lab.apiserverArgs=--max-requests-inflight=800,profiling,v=2"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.l.Load()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case c.want == "":
				return
			case err == nil:
				t.Fatalf("no error, want %q", c.want)
			}
			if !IsConfigError(err) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\ndoes not contain %q", err.Error(), c.want)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\n\t") || len(msg) > 600 {
				t.Errorf("error is not one readable line (%d bytes): %q", len(msg), msg)
			}
		})
	}
}
