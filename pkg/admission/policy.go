package admission

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// Rule is what a policy is made of: a rule's set and copy-from-Namespace
// actions on the resources of its kinds, where it may write.
type Rule struct {
	Name string
	// Resources are the rule's kinds as the API server serves them, and
	// whether each is namespaced.
	Resources []Resource
	// Match is the rule's match selector; nil or empty matches every object.
	Match                       labels.Selector
	SetLabels, SetAnnotations   map[string]string
	CopyLabels, CopyAnnotations []string
	// Namespaces, if not empty, are the only namespaces written;
	// ExcludeNamespaces are never written (the write scope).
	Namespaces, ExcludeNamespaces []string
}

// Resource is one kind a policy applies to.
type Resource struct {
	schema.GroupVersionResource
	Namespaced bool
}

// ManagedBy labels every policy and binding metawatch makes, with the rule's name in RuleLabel.
const (
	ManagedBy = "metawatch"
	RuleLabel = "metawatch.dev/rule"
)

// Name is the name of the policy and of the binding of the rule named rule.
func Name(rule string) string { return "metawatch-" + rule }

// Policy returns the policy and binding that apply r's keys at creation.
func Policy(r Rule) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
	match, err := selectorCEL(orEverything(r.Match))
	if err != nil {
		return nil, nil, fmt.Errorf("rule %q: match.labelSelector: %w", r.Name, err)
	}
	mutations := mutationsOf(r)
	if len(mutations) == 0 {
		return nil, nil, fmt.Errorf("rule %q sets and copies nothing: no admission policy to make", r.Name)
	}
	meta := metav1.ObjectMeta{Name: Name(r.Name), Labels: map[string]string{"app.kubernetes.io/managed-by": ManagedBy, RuleLabel: r.Name}}
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: meta,
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   &admissionregistrationv1.MatchResources{ResourceRules: resourceRules(r.Resources)},
			MatchConditions:    []admissionregistrationv1.MatchCondition{{Name: "rule-match", Expression: match}},
			Mutations:          mutations,
			FailurePolicy:      ptr.To(admissionregistrationv1.Ignore), // a creation never fails because of metawatch
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: *meta.DeepCopy(),
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName:     policy.Name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: namespaceSelector(r.Namespaces, r.ExcludeNamespaces)},
		},
	}
	return policy, binding, nil
}

func orEverything(sel labels.Selector) labels.Selector {
	if sel == nil {
		return labels.Everything()
	}
	return sel
}

// mutationsOf is one apply configuration for the set keys, and one per
// copied key, which applies only where the Namespace has the key.
func mutationsOf(r Rule) []admissionregistrationv1.Mutation {
	var out []admissionregistrationv1.Mutation
	if set := metadataCEL(mapCEL(r.SetLabels), mapCEL(r.SetAnnotations)); set != "" {
		out = append(out, applyConfiguration(set))
	}
	for _, k := range sorted(r.CopyLabels) {
		out = append(out, applyConfiguration(copyCEL("labels", k, metadataCEL(fromNamespace("labels", k), ""))))
	}
	for _, k := range sorted(r.CopyAnnotations) {
		out = append(out, applyConfiguration(copyCEL("annotations", k, metadataCEL("", fromNamespace("annotations", k)))))
	}
	return out
}

func applyConfiguration(expression string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expression}}
}

// metadataCEL is an apply configuration of the object's labels and
// annotations, each a CEL map literal or "" for none; "" if both are.
func metadataCEL(labelsMap, annotationsMap string) string {
	var fields []string
	if labelsMap != "" {
		fields = append(fields, "labels: "+labelsMap)
	}
	if annotationsMap != "" {
		fields = append(fields, "annotations: "+annotationsMap)
	}
	if len(fields) == 0 {
		return ""
	}
	return "Object{metadata: Object.metadata{" + strings.Join(fields, ", ") + "}}"
}

// mapCEL is m as a CEL map literal, "" if empty.
func mapCEL(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	entries := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		entries = append(entries, quote(k)+": "+quote(m[k]))
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

// fromNamespace is a CEL map literal of the Namespace's key in field.
func fromNamespace(field, key string) string {
	return "{" + quote(key) + ": namespaceObject.metadata." + field + "[" + quote(key) + "]}"
}

// copyCEL applies apply where the Namespace's field has key, else nothing.
func copyCEL(field, key, apply string) string {
	return "namespaceObject != null && has(namespaceObject.metadata." + field + ") && " + quote(key) + " in namespaceObject.metadata." + field +
		" ? " + apply + " : Object{}"
}

func resourceRules(resources []Resource) []admissionregistrationv1.NamedRuleWithOperations {
	out := make([]admissionregistrationv1.NamedRuleWithOperations, 0, len(resources))
	for _, res := range resources {
		scope := admissionregistrationv1.ClusterScope
		if res.Namespaced {
			scope = admissionregistrationv1.NamespacedScope
		}
		out = append(out, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{res.Group}, APIVersions: []string{res.Version}, Resources: []string{res.Resource},
				Scope: ptr.To(scope)},
		}})
	}
	return out
}

// namespaceSelector selects the namespaces of the write scope by their name
// label (kubernetes.io/metadata.name, which the API server sets on each).
func namespaceSelector(include, exclude []string) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{}
	if len(include) > 0 {
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: sorted(include)})
	}
	if len(exclude) > 0 {
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: sorted(exclude)})
	}
	return sel
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
