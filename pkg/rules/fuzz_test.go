package rules_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/metawatch/metawatch/pkg/rules"
)

// FuzzEvaluate checks the core's promises for any object, namespace and
// owners: keys copied from the namespace equal the namespace's, keys copied
// from the owner equal the nearest owner's of the rule's kinds (never an
// intermediate's), set keys equal the rule's, violations name only keys the
// object lacks, and the same input gives the same answer.
func FuzzEvaluate(f *testing.F) {
	f.Add("team=a,app=web", "team=b", "team", "app", "cost=1", "cost=2,tier=x", "cost,tier")
	f.Add("", "", "", "", "", "", "")
	f.Add("x=1", "x=2,y=3", "y", "x,z", "o=1", "", "o")
	f.Fuzz(func(t *testing.T, objLabels, nsLabels, copyKeys, requireKeys, replicaSetLabels, deploymentLabels, ownerKeys string) {
		obj := rules.Metadata{Labels: parseSet(objLabels)}
		ns := &rules.Metadata{Labels: parseSet(nsLabels)}
		deployment := rules.Metadata{Labels: parseSet(deploymentLabels)}
		owners := []rules.Owner{{Kind: "ReplicaSet", Metadata: rules.Metadata{Labels: parseSet(replicaSetLabels)}}, {Kind: "Deployment", Metadata: deployment}}
		rs := []rules.Rule{
			{Name: "copy", CopyLabels: splitKeys(copyKeys)},
			{Name: "owner", OwnerKinds: []string{"Deployment", "StatefulSet"}, OwnerLabels: splitKeys(ownerKeys)},
			{Name: "require", RequireLabels: splitKeys(requireKeys)},
			{Name: "set", SetLabels: map[string]string{"fixed": "v"}, Match: labels.Everything()},
		}
		res := rules.Evaluate(rs, obj, rules.Sources{Namespace: ns, Owners: owners})
		for k, o := range res.Labels {
			source := ns.Labels
			switch o.Rule {
			case "owner":
				source = deployment.Labels
			case "set":
				source = map[string]string{"fixed": "v"}
			}
			if want, ok := source[k]; !ok || o.Value != want {
				t.Fatalf("label %s=%q (rule %s) is not its source's", k, o.Value, o.Rule)
			}
		}
		for _, k := range splitKeys(ownerKeys) {
			if _, ok := deployment.Labels[k]; ok && res.Labels[k].Rule == "" {
				t.Fatalf("the Deployment's %s is not copied", k)
			}
		}
		for _, v := range res.Violations {
			for _, k := range v.MissingLabels {
				if _, has := obj.Labels[k]; has {
					t.Fatalf("violation names %s, which the object has", k)
				}
			}
		}
		again := rules.Evaluate(rs, obj, rules.Sources{Namespace: ns, Owners: owners})
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
