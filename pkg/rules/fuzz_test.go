package rules_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/metawatch/metawatch/pkg/rules"
)

// FuzzEvaluate checks the core's promises for any object and namespace:
// copied keys equal the namespace's, set keys equal the rule's, violations name
// only keys the object lacks, and the same input gives the same answer.
func FuzzEvaluate(f *testing.F) {
	f.Add("team=a,app=web", "team=b", "team", "app")
	f.Add("", "", "", "")
	f.Add("x=1", "x=2,y=3", "y", "x,z")
	f.Fuzz(func(t *testing.T, objLabels, nsLabels, copyKeys, requireKeys string) {
		obj := rules.Metadata{Labels: parseSet(objLabels)}
		ns := &rules.Metadata{Labels: parseSet(nsLabels)}
		rs := []rules.Rule{
			{Name: "copy", CopyLabels: splitKeys(copyKeys)},
			{Name: "require", RequireLabels: splitKeys(requireKeys)},
			{Name: "set", SetLabels: map[string]string{"fixed": "v"}, Match: labels.Everything()},
		}
		res := rules.Evaluate(rs, obj, ns)
		for k, o := range res.Labels {
			want, fromNS := ns.Labels[k]
			if k == "fixed" {
				want, fromNS = "v", true
			}
			if !fromNS || o.Value != want {
				t.Fatalf("label %s=%q (rule %s) is neither the namespace's nor the set value", k, o.Value, o.Rule)
			}
		}
		for _, v := range res.Violations {
			for _, k := range v.MissingLabels {
				if _, has := obj.Labels[k]; has {
					t.Fatalf("violation names %s, which the object has", k)
				}
			}
		}
		again := rules.Evaluate(rs, obj, ns)
		if len(again.Labels) != len(res.Labels) || len(again.Violations) != len(res.Violations) {
			t.Fatal("Evaluate is not deterministic")
		}
	})
}

func parseSet(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

func splitKeys(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
