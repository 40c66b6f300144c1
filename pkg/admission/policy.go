package admission

import (
	"fmt"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/metawatch/metawatch/pkg/config"
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
	// Force: the rule takes keys another field manager set with another
	// value. Without it, a key the object is created with is left as it is
	// (the controller would report a conflict and not write it either).
	Force bool
	// Scopes are the write scopes (the operator's, the configuration's): an
	// object is written only in a namespace all of them allow.
	Scopes []*config.WriteScope
}

// Resource is one kind a policy applies to.
type Resource struct {
	schema.GroupVersionResource
	Namespaced bool
	// Namespaces, Label and Field are the kind's watch: the policy writes
	// only objects the controller caches, which it alone can keep and
	// release. Empty or nil: every object of the kind.
	Namespaces []string
	Label      labels.Selector
	Field      fields.Selector
}

// ManagedBy is the app.kubernetes.io/managed-by label of every policy and
// binding metawatch makes: those it updates and deletes, and no other. The
// rule's name is in the RuleAnnotation (a rule's name may be longer than a
// label value).
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "metawatch"
	RuleAnnotation = "metawatch.dev/rule"
)

// Name is the name of the policy and of the binding of the rule named rule.
func Name(rule string) string { return config.PolicyNamePrefix + rule }

// Policy returns the policy and binding that apply r's keys at creation.
func Policy(r Rule) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
	match, err := selectorCEL(orEverything(r.Match))
	if err != nil {
		return nil, nil, fmt.Errorf("rule %q: match.labelSelector: %w", r.Name, err)
	}
	watched, err := watchedCEL(r.Resources)
	if err != nil {
		return nil, nil, fmt.Errorf("rule %q: %w", r.Name, err)
	}
	mutations, _ := mutationsOf(r)
	if len(mutations) == 0 {
		return nil, nil, fmt.Errorf("rule %q sets and copies nothing: no admission policy to make", r.Name)
	}
	meta := metav1.ObjectMeta{Name: Name(r.Name), Labels: map[string]string{ManagedByLabel: ManagedBy}, Annotations: map[string]string{RuleAnnotation: r.Name}}
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: meta,
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: resourceRules(r.Resources)},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "rule-match", Expression: match}, {Name: "write-scope", Expression: scopeCEL(r.Scopes)}, {Name: "watched", Expression: watched}},
			Mutations:          mutations,
			FailurePolicy:      ptr.To(admissionregistrationv1.Ignore), // a creation never fails because of metawatch
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: *meta.DeepCopy(),
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: policy.Name,
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

// mutationsOf is one apply configuration per key: a set key where the
// object lacks it (any value with Force), a copied key where the Namespace
// has it and the object lacks it (any value with Force). sources say where
// each comes from in the rule, e.g. setAnnotations[example.com/note].
func mutationsOf(r Rule) (out []admissionregistrationv1.Mutation, sources []string) {
	add := func(field, key, valueCEL, when string) {
		if !r.Force {
			when = and(when, absent(field, key))
		}
		apply := "Object{metadata: Object.metadata{" + field + ": {" + quote(key) + ": " + valueCEL + "}}}"
		if when != "" {
			apply = when + " ? " + apply + " : Object{}"
		}
		out = append(out, applyConfiguration(apply))
	}
	for _, k := range sortedKeys(r.SetLabels) {
		add("labels", k, quote(r.SetLabels[k]), "")
		sources = append(sources, "setLabels["+k+"]")
	}
	for _, k := range sortedKeys(r.SetAnnotations) {
		add("annotations", k, quote(r.SetAnnotations[k]), "")
		sources = append(sources, "setAnnotations["+k+"]")
	}
	for _, k := range sorted(r.CopyLabels) {
		add("labels", k, "namespaceObject.metadata.labels["+quote(k)+"]", inNamespace("labels", k))
		sources = append(sources, "copyFromNamespace.labels "+k)
	}
	for _, k := range sorted(r.CopyAnnotations) {
		add("annotations", k, "namespaceObject.metadata.annotations["+quote(k)+"]", inNamespace("annotations", k))
		sources = append(sources, "copyFromNamespace.annotations "+k)
	}
	return out, sources
}

// absent is true where the created object has no key in field.
func absent(field, key string) string {
	return "!(has(object.metadata." + field + ") && " + quote(key) + " in object.metadata." + field + ")"
}

// inNamespace is true where the object's Namespace has key in field.
func inNamespace(field, key string) string {
	return "namespaceObject != null && has(namespaceObject.metadata." + field + ") && " + quote(key) + " in namespaceObject.metadata." + field
}

// and joins two CEL conditions, either of which may be "" (true).
func and(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return "(" + a + ") && (" + b + ")"
}

func applyConfiguration(expression string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expression}}
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

// Resources are the resources of what metawatch makes, and Verbs what it
// does to them (get: to tell a policy of the same name it did not make).
var (
	Resources = []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}
	Verbs     = []string{"get", "list", "create", "patch", "delete"}
)
