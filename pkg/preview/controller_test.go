package preview_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/preview"
)

const mine = `
  managedFields:
  - {manager: metawatch, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:labels": {"f:team": {}, "f:legacy": {}}}}}`

// The preview says what the controller would do, where it waits, skips or
// stops too.
func TestPreviewDoesAsTheControllerWould(t *testing.T) {
	cases := map[string]struct {
		config, objects string
		want, not       []string
	}{
		"a missing Namespace: the controller waits, and releases nothing": {
			config:  "watches: [{kind: Pod}]\nrules: [{name: copy, kinds: [Pod], copyFromNamespace: {labels: [team]}}]\n",
			objects: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n  labels: {team: red}" + mine + "\n",
			want:    []string{"note: waits: Namespace shop is not among the objects", "0 would change"},
			not:     []string{"would release"},
		},
		"a missing owner of a followed kind: it waits": {
			config: "watches: [{kind: Pod}]\nrules: [{name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [team]}}]\n",
			objects: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n  labels: {team: red}\n" +
				"  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u-rs, controller: true}]" + mine + "\n",
			want: []string{"waits: its owner ReplicaSet rs is not among the objects"},
			not:  []string{"would release"},
		},
		"an owner of a kind not followed: the chain ends, and the key goes": {
			config: "watches: [{kind: Pod}]\nrules: [{name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [team]}}]\n",
			objects: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n  labels: {team: red}\n" +
				"  ownerReferences: [{apiVersion: argoproj.io/v1alpha1, kind: Rollout, name: ro, uid: u-ro, controller: true}]" + mine + "\n",
			want: []string{"its owner chain ends at Rollout.argoproj.io ro, a kind copyFromOwner does not follow", "would release label team"},
			not:  []string{"waits"},
		},
		"an owner with the uid in another namespace is not the owner": {
			config: "watches: [{kind: Pod}]\nrules: [{name: cost, kinds: [Pod], copyFromOwner: {kinds: [ReplicaSet], labels: [team]}}]\n",
			objects: "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, namespace: shop, uid: u-rs, labels: {team: red}}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: other\n" +
				"  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u-rs, controller: true}]\n",
			want: []string{"waits: its owner ReplicaSet rs is not among the objects"},
			not:  []string{"would set"},
		},
		"outside the write scope: neither written nor audited": {
			config:  "watches: [{kind: Pod}]\nwriteScope: {excludeNamespaces: [kube-system]}\nrules: [{name: req, kinds: [Pod], requireLabels: [team]}]\n",
			objects: "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: kube-system}\n",
			want:    []string{`not looked at: namespace "kube-system" is outside the write scope`},
			not:     []string{"violation"},
		},
		"a kind nobody watches is not called an owner": {
			config:  "watches: [{kind: Pod}]\nrules: [{name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [team]}}]\n",
			objects: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: shop}\n",
			want:    []string{"the configuration watches no ConfigMap"},
		},
		"a custom kind called like a watched built-in kind is not watched": {
			config:  "watches: [{kind: Deployment}]\nrules: [{name: tier, kinds: [Deployment], setLabels: {tier: gold}}]\n",
			objects: "apiVersion: evil.example.com/v1\nkind: Deployment\nmetadata: {name: d, namespace: shop}\n",
			want:    []string{"the configuration watches no Deployment.evil.example.com"},
			not:     []string{"would set"},
		},
		"an owner of another group called like a followed kind ends the chain": {
			config: "watches: [{kind: Pod}]\nrules: [{name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [team]}}]\n",
			objects: "apiVersion: evil.example.com/v1\nkind: Deployment\nmetadata: {name: d, namespace: shop, uid: u-d, labels: {team: red}}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n" +
				"  ownerReferences: [{apiVersion: evil.example.com/v1, kind: Deployment, name: d, uid: u-d, controller: true}]\n",
			want: []string{"its owner chain ends at Deployment.evil.example.com d, a kind copyFromOwner does not follow"},
			not:  []string{"would set"},
		},
		"an owner chain longer than the controller follows": {
			config:  "watches: [{kind: Pod}]\nrules: [{name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [team]}}]\n",
			objects: replicaSetChain(4) + "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: shop, uid: u-d, labels: {team: red}}\n",
			want:    []string{"its owner chain is longer than the 4 owners metawatch follows"},
			not:     []string{"would set"},
		},
		"a key a rule removes is removed, not also released": {
			config:  "watches: [{kind: Pod}]\nrules: [{name: drop, kinds: [Pod], removeLabels: [legacy]}]\n",
			objects: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n  labels: {legacy: x}" + mine + "\n",
			want:    []string{"would remove label legacy"},
			not:     []string{"would release label legacy"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { checkReport(t, tc.config, tc.objects, nil, tc.want, tc.not) })
	}
}

// checkReport previews objects with configYAML and limits (nil: the
// defaults), and checks the text report says each of want and none of not.
func checkReport(t *testing.T, configYAML, objects string, limits *config.Guardrails, want, not []string) {
	t.Helper()
	reports := reportsOf(t, configYAML, objects, limits)
	var out strings.Builder
	if err := preview.WriteText(&out, reports); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the report lacks %q:\n%s", w, out.String())
		}
	}
	for _, n := range not {
		if strings.Contains(out.String(), n) {
			t.Errorf("the report says %q:\n%s", n, out.String())
		}
	}
}

// replicaSetChain is a pod under n ReplicaSets each controlled by the next,
// the last by Deployment d.
func replicaSetChain(n int) string {
	owner := func(i int) string {
		if i == n {
			return "{apiVersion: apps/v1, kind: Deployment, name: d, uid: u-d, controller: true}"
		}
		return fmt.Sprintf("{apiVersion: apps/v1, kind: ReplicaSet, name: rs%d, uid: u-rs%d, controller: true}", i, i)
	}
	out := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n  ownerReferences: [" + owner(0) + "]\n---\n"
	for i := range n {
		out += fmt.Sprintf("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: rs%d\n  namespace: shop\n  uid: u-rs%d\n  ownerReferences: [%s]\n---\n", i, i, owner(i+1))
	}
	return out
}
