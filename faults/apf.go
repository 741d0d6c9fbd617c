package faults

import (
	"context"
	"encoding/json"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/brakebench/brakebench/internal/undo"
)

// APFThrottle squeezes one identity into a tiny API Priority and Fairness priority level: a
// PriorityLevelConfiguration with few seats and short queues, and a FlowSchema (precedence below
// the built-in service-accounts and catch-all schemas) that sends the identity's requests there.
// It works on any cluster where the identity is not exempt (not system:masters).
type APFThrottle struct {
	Client     kubernetes.Interface
	Journal    *undo.Journal
	Labels     map[string]string
	ObjectName string // object name of both the level and the schema
	// Subject: the ServiceAccount whose requests are throttled.
	Namespace, ServiceAccount string
	Shares                    int32 // nominalConcurrencyShares (1 gives ~3 seats at 600 server seats)
	Queues, QueueLength       int32
	Precedence                int32
}

// Fault name.
func (f *APFThrottle) Name() string { return "apf-throttle" }

// Objects are the level and the schema the fault creates.
func (f *APFThrottle) Objects() (*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.FlowSchema) {
	zero := int32(0)
	shares := f.Shares
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: f.ObjectName, Labels: f.Labels},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &shares, LendablePercent: &zero, BorrowingLimitPercent: &zero,
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: f.Queues, HandSize: 1, QueueLengthLimit: f.QueueLength}},
			},
		},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: f.ObjectName, Labels: f.Labels},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: f.ObjectName},
			MatchingPrecedence:         f.Precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
					ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: f.Namespace, Name: f.ServiceAccount}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					ClusterScope: true, Namespaces: []string{"*"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	return pl, fs
}

// Arm journals and registers the deletion of both objects before creating them.
func (f *APFThrottle) Arm(ctx context.Context) (undo.Revert, error) {
	pl, fs := f.Objects()
	revert := func(ctx context.Context) error {
		var errs []error
		if err := f.Client.FlowcontrolV1().FlowSchemas().Delete(ctx, fs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
		if err := f.Client.FlowcontrolV1().PriorityLevelConfigurations().Delete(ctx, pl.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("remove APF throttle %s: %v", f.ObjectName, errs)
		}
		return nil
	}
	for _, e := range []undo.Entry{
		{Op: undo.OpCreated, APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "PriorityLevelConfiguration", Resource: "prioritylevelconfigurations", Name: pl.Name},
		{Op: undo.OpCreated, APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "FlowSchema", Resource: "flowschemas", Name: fs.Name},
	} {
		if err := f.Journal.Record(e); err != nil {
			return nil, err
		}
	}
	if _, err := f.Client.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
		return revert, fmt.Errorf("create priority level %s: %w", pl.Name, err)
	}
	if _, err := f.Client.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		return revert, fmt.Errorf("create flow schema %s: %w", fs.Name, err)
	}
	return revert, nil
}

// marshal is json.Marshal for journal originals.
func marshal(v any) json.RawMessage {
	raw, _ := json.Marshal(v)
	return raw
}
