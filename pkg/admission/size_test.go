package admission_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

func TestCheckSizesRefusesExpressionsTheServerWould(t *testing.T) {
	many := make([]string, 8000)
	for i := range many {
		many[i] = fmt.Sprintf("team-namespace-%05d", i)
	}
	for name, tc := range map[string]struct {
		rule admission.Rule
		want []string // empty: within the limit
	}{
		"a short value": {rule: admission.Rule{Name: "small", Resources: []admission.Resource{pods}, SetAnnotations: map[string]string{"example.com/a": "b"}}},
		"a value of 99,000 characters": {rule: admission.Rule{Name: "long", Resources: []admission.Resource{pods},
			SetAnnotations: map[string]string{"example.com/notes": strings.Repeat("x", 99_000)}}},
		"a value over the limit": {rule: admission.Rule{Name: "notes", Resources: []admission.Resource{pods},
			SetAnnotations: map[string]string{"example.com/notes": strings.Repeat("x", 120_000)}},
			want: []string{`rule "notes": the CEL expression of setAnnotations[example.com/notes] is 120`, "code points, over the API server's limit of 100000 per expression: shorten the value"}},
		"a value under the limit that its escaping puts over": {rule: admission.Rule{Name: "tabs", Resources: []admission.Resource{pods},
			SetAnnotations: map[string]string{"example.com/tabs": strings.Repeat("\x01", 30_000)}},
			want: []string{"setAnnotations[example.com/tabs] is 120"}},
		"multi-byte characters count once": {rule: admission.Rule{Name: "accents", Resources: []admission.Resource{pods},
			SetAnnotations: map[string]string{"example.com/a": strings.Repeat("é", 90_000)}}},
		"a write scope of many namespaces": {rule: admission.Rule{Name: "scoped", Resources: []admission.Resource{pods},
			SetLabels: map[string]string{"tier": "gold"}, Scopes: []*config.WriteScope{{Namespaces: many}}},
			want: []string{"the CEL expression of the write scope (writeScope, --write-namespaces, --exclude-write-namespaces)", "list fewer namespaces"}},
	} {
		t.Run(name, func(t *testing.T) {
			testkit.WantInvalid(t, admission.CheckSizes([]admission.Rule{tc.rule}), tc.want...)
		})
	}
}

// CheckSizes draws the line where the API server does: a policy whose
// longest expression is exactly the limit is created, one code point more
// is refused, and multi-byte characters count once.
func TestCheckSizesIsTheServersLimit(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	for name, extra := range map[string]int{"at the limit": 0, "one over": 1} {
		t.Run(name, func(t *testing.T) {
			r := ruleWithExpressionOf(t, admission.MaxExpressionCodePoints+extra)
			policy, _, err := admission.Policy(r)
			if err != nil {
				t.Fatal(err)
			}
			created := c.Create(t.Context(), policy, client.DryRunAll)
			checked := admission.CheckSizes([]admission.Rule{r})
			if (created == nil) != (checked == nil) {
				t.Fatalf("the API server says %v, CheckSizes says %v", created, checked)
			}
			if (extra == 0) != (created == nil) {
				t.Fatalf("an expression of %d code points: the API server says %v", admission.MaxExpressionCodePoints+extra, created)
			}
		})
	}
}

// ruleWithExpressionOf is a rule whose annotation's expression is n code
// points long, its value of two-byte characters.
func ruleWithExpressionOf(t *testing.T, n int) admission.Rule {
	t.Helper()
	r := admission.Rule{Name: "boundary", Resources: []admission.Resource{pods}, SetAnnotations: map[string]string{"example.com/v": ""}}
	policy, _, err := admission.Policy(r)
	if err != nil {
		t.Fatal(err)
	}
	overhead := utf8.RuneCountInString(policy.Spec.Mutations[0].ApplyConfiguration.Expression)
	r.SetAnnotations["example.com/v"] = strings.Repeat("é", n-overhead)
	policy, _, _ = admission.Policy(r)
	if got := utf8.RuneCountInString(policy.Spec.Mutations[0].ApplyConfiguration.Expression); got != n {
		t.Fatalf("expression of %d code points, want %d", got, n)
	}
	return r
}
