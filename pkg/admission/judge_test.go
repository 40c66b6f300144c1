package admission_test

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/config"
)

// builtIns maps the resources the tests' policies name, as the API server would.
func builtIns() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, meta.RESTScopeRoot)
	return m
}

var nodes = admission.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}}

// A pair is judged from what its policy writes: a policy made from a rule
// within the limits is allowed, and each way the limits narrow since is
// found in the policy itself, whatever configuration runs (or none).
func TestJudgeReadsWhatAPolicyWritesBack(t *testing.T) {
	team := admission.Rule{Name: "team", Resources: []admission.Resource{pods}, SetLabels: map[string]string{"tier": "gold", "x.kubernetes.io/y": "1"},
		CopyAnnotations: []string{`odd"key`}, Scopes: []*config.WriteScope{{ExcludeNamespaces: []string{"kube-system"}}, {Namespaces: []string{"shop", "web"}}}}
	allowed := func(l *config.Guardrails) {
		l.AtCreation, l.ProtectedKeys, l.AllowedReservedKeys = true, nil, []string{"x.kubernetes.io/y"}
	}
	for name, tc := range map[string]struct {
		rule   admission.Rule
		limits func(*config.Guardrails)
		edit   func(*admissionregistrationv1.MutatingAdmissionPolicy)
		want   string // in the error; "": allowed
	}{
		"a policy made within the limits is allowed":     {rule: team, limits: allowed},
		"every policy goes once atCreation is off":       {rule: team, limits: func(l *config.Guardrails) { allowed(l); l.AtCreation = false }, want: "--allow-at-creation is off"},
		"a key it sets, protected since, is found":       {rule: team, limits: func(l *config.Guardrails) { allowed(l); l.ProtectedKeys = []string{"tier"} }, want: "protects tier"},
		"a copied key with a quote, protected, is found": {rule: team, limits: func(l *config.Guardrails) { allowed(l); l.ProtectedKeys = []string{`odd"key`} }, want: `protects odd"key`},
		"a reserved key no longer allowed is found":      {rule: team, limits: func(l *config.Guardrails) { allowed(l); l.AllowedReservedKeys = nil }, want: "x.kubernetes.io/y is under a prefix"},
		"a kind no longer writable is found":             {rule: team, limits: func(l *config.Guardrails) { allowed(l); l.WritableKinds = []string{"Deployment"} }, want: "not Pod"},
		"a cluster-scoped kind is not writable by *": {rule: admission.Rule{Name: "n", Resources: []admission.Resource{nodes}, SetLabels: map[string]string{"a": "b"}},
			limits: func(l *config.Guardrails) { allowed(l); l.WritableKinds = []string{"*"} }, want: "not Node"},
		"a namespace excluded since is found": {rule: team, limits: func(l *config.Guardrails) { allowed(l); l.WriteScope.ExcludeNamespaces = []string{"web"} },
			want: "namespace web"},
		"a write scope narrowed since is found": {rule: team, limits: func(l *config.Guardrails) { allowed(l); l.WriteScope.Namespaces = []string{"shop"} }, want: "namespace web"},
		"a mutation metawatch does not write is not allowed": {rule: team, limits: allowed, want: "mutation 0",
			edit: func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
				p.Spec.Mutations[0].ApplyConfiguration.Expression = "Object{spec: Object.spec{nodeName: \"n\"}}"
			}},
		"a mutation with a second key is not allowed": {rule: team, limits: allowed, want: "mutation 0",
			edit: func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
				p.Spec.Mutations[0].ApplyConfiguration.Expression = `Object{metadata: Object.metadata{labels: {"ok": "x", "kubernetes.io/evil": "y"}}}`
			}},
		"a mutation hiding a write in its condition is not allowed": {rule: team, limits: allowed, want: "mutation 0",
			edit: func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
				p.Spec.Mutations[0].ApplyConfiguration.Expression = `true ? Object{metadata: Object.metadata{labels: {"kubernetes.io/evil": "y"}}} : Object{} ? ` +
					`Object{metadata: Object.metadata{labels: {"ok": "x"}}} : Object{}`
			}},
		"a scope metawatch does not write is not allowed": {rule: team, limits: allowed, want: "write-scope condition",
			edit: func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
				p.Spec.MatchConditions[1].Expression = "request.namespace != \"x\""
			}},
		"an older policy without a write scope writes everywhere": {rule: team, limits: func(l *config.Guardrails) { allowed(l); l.WriteScope.Namespaces = []string{"shop"} },
			want: "every namespace", edit: func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
				p.Spec.MatchConditions = p.Spec.MatchConditions[:1]
			}},
	} {
		t.Run(name, func(t *testing.T) {
			policy, _, err := admission.Policy(tc.rule)
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(policy)
			}
			limits := config.DefaultGuardrails()
			tc.limits(&limits)
			err = admission.Judge(&limits, builtIns(), policy)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
