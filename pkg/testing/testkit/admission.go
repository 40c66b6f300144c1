package testkit

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RequireLabel refuses the creation of pods without the label key in the
// namespaces namespaces selects, as a cluster's own ValidatingAdmissionPolicy
// would; the policy and its binding, named name, go at the test's end.
func RequireLabel(t testing.TB, c client.Client, name, key string, namespaces *metav1.LabelSelector) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
		Validations: []admissionregistrationv1.Validation{{Expression: `has(object.metadata.labels) && "` + key + `" in object.metadata.labels`, Message: "pods need the label " + key}},
	}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
		PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: namespaces},
	}}
	for _, obj := range []client.Object{policy, binding} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // t.Context() has ended by then
		_ = c.Delete(context.Background(), binding)
		_ = c.Delete(context.Background(), policy)
	})
}

// WaitAdmitted waits until pods created in ns get the label key at
// admission (the API server loads a new admission policy a moment after it
// is written): a probe pod, deleted again, carries it. probeLabels are the
// probe's own labels (nil: none).
func WaitAdmitted(t testing.TB, c client.Client, ns, key string, probeLabels map[string]string) {
	t.Helper()
	WaitFor(t, "the admission policy to take effect", 2*Timeout, func() bool {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-", Labels: probeLabels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: PodImage}}}}
		if err := c.Create(t.Context(), probe); err != nil {
			return false // refused by a policy that requires what is not applied yet
		}
		defer func() { _ = c.Delete(t.Context(), probe) }()
		return probe.Labels[key] != ""
	})
}
