package preview_test

import (
	"fmt"
	"testing"
)

// An object no rule looks at is skipped with the reason the controller
// would not see or write it (its kind, its watch's namespaces, label or
// field selector, the write scope, or its role as a source); an object the
// rules look at gets each rule's verdict instead.
func TestEachObjectIsSkippedOrJudgedRuleByRule(t *testing.T) {
	const rules = "rules:\n- {name: tier, kinds: [Pod], match: {labelSelector: app=web}, setLabels: {tier: gold}}\n" +
		"- {name: copy, kinds: [Pod], copyFromNamespace: {labels: [team]}}\n"
	cases := map[string]struct {
		config, object string
		skipped        string
		verdicts       []string // "rule applies: why"
	}{
		"a kind nobody watches": {
			config: "watches: [{kind: Pod}]\n" + rules, object: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\n",
			skipped: "the configuration watches no ConfigMap",
		},
		"a Namespace is read as the source of copyFromNamespace": {
			config: "watches: [{kind: Pod}]\n" + rules, object: "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n",
			skipped: "no rule writes Namespaces; read as the source of copyFromNamespace",
		},
		"a namespace the watch leaves out": {
			config: "watches: [{kind: Pod, namespaces: [a, b]}]\n" + rules, object: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\n",
			skipped: `the Pod watch's namespaces [a b] leave out namespace "shop"`,
		},
		"labels the watch's selector does not select": {
			config: "watches: [{kind: Pod, labelSelector: app=web}]\n" + rules, object: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop, labels: {app: db}}\n",
			skipped: `the Pod watch's labelSelector "app=web" does not select it`,
		},
		"a field the watch's selector does not select": {
			config:  "watches: [{kind: Pod, fieldSelector: status.phase!=Succeeded}]\n" + rules,
			object:  "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\nstatus: {phase: Succeeded}\n",
			skipped: `the Pod watch's fieldSelector "status.phase!=Succeeded" does not select it`,
		},
		"a namespace outside the write scope": {
			config: "watches: [{kind: Pod}]\nwriteScope: {namespaces: [prod]}\n" + rules, object: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\n",
			skipped: `namespace "shop" is outside the write scope: metawatch neither writes nor audits it`,
		},
		"a watched object gets each rule's verdict": {
			config:   "watches: [{kind: Pod, fieldSelector: status.phase!=Succeeded}]\n" + rules,
			object:   "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop, labels: {app: db}}\nstatus: {phase: Running}\n",
			verdicts: []string{`tier false: match.labelSelector "app=web" does not select the object`, "copy true: it has no match: every Pod"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := reportsOf(t, tc.config, tc.object, nil)[0]
			var verdicts []string
			for _, v := range r.Rules {
				verdicts = append(verdicts, fmt.Sprintf("%s %v: %s", v.Rule, v.Applies, v.Why))
			}
			if r.Skipped != tc.skipped || fmt.Sprintf("%q", verdicts) != fmt.Sprintf("%q", tc.verdicts) {
				t.Errorf("skipped %q, verdicts %q; want skipped %q, verdicts %q", r.Skipped, verdicts, tc.skipped, tc.verdicts)
			}
			if tc.skipped != "" && (r.Changes() || r.Offends()) {
				t.Errorf("a skipped object changes (%v) or offends (%v): %+v", r.Changes(), r.Offends(), r)
			}
		})
	}
}
