package check_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/check"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

func TestCheck(t *testing.T) {
	controlplane.SkipIfShort(t)
	cases := map[string]struct {
		config     string
		kubeconfig bool
		flags      []string
		wantExit   int
		want       []string
	}{
		"a valid bare config, offline": {config: "watches:\n- kind: Pod\n", wantExit: 0, want: []string{"1 watches, 0 rules: valid offline", "SUCCESS"}},
		"a valid ConfigMap manifest, offline": {
			config:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata:\n  config.yaml: |\n    watches: [{kind: Node}]\n",
			wantExit: 0, want: []string{"SUCCESS"},
		},
		"every error listed, offline": {
			config:   "watches:\n- kind: Pod\n  labelSelector: 'a in ('\n- kind: Node\n  fieldSelector: x\n",
			wantExit: 1, want: []string{"FAILED", "watches[0].labelSelector", "watches[1].fieldSelector"},
		},
		"resolved and permitted on the cluster": {
			config:     "watches:\n- kind: Pod\n- kind: Deployment\nrules:\n- {name: r, kinds: [Pod], setLabels: {a: b}}\n",
			kubeconfig: true, wantExit: 0,
			want: []string{"KIND", "Pod", "pods", "yes", "Deployment", "deployments.apps", "SUCCESS"},
		},
		"a rule with atCreation, its policy compiled by the server": {
			config:     "watches:\n- kind: Pod\n- kind: Namespace\nrules:\n- {name: team, kinds: [Pod], atCreation: true, match: {labelSelector: '!skip'}, setLabels: {tier: gold}, copyFromNamespace: {labels: [team]}}\n",
			kubeconfig: true, flags: []string{"--allow-at-creation", "--live"}, wantExit: 0,
			want: []string{"rule team: MutatingAdmissionPolicy and binding metawatch-team accepted by the server (dry run, CEL compiled)", "SUCCESS"},
		},
		"a rule with atCreation, offline": {
			config:   "watches:\n- kind: Pod\nrules:\n- {name: team, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}\n",
			flags:    []string{"--allow-at-creation"},
			wantExit: 0, want: []string{"atCreation: 1 rules get an admission policy; --live checks them on the cluster: team", "SUCCESS"},
		},
		"--live without a cluster": {config: "watches:\n- kind: Pod\n", flags: []string{"--live"}, wantExit: 2, want: []string{"usage: metawatch check"}},
		"an unknown kind on the cluster": {
			config: "watches:\n- kind: Podz\n", kubeconfig: true, wantExit: 1, want: []string{`watches[0].kind: Invalid value: "Podz"`},
		},
		"a field the server rejects": {
			config: "watches:\n- kind: Pod\n  fieldSelector: spec.priority=1\n", kubeconfig: true, wantExit: 1,
			want: []string{`watches[0].fieldSelector "spec.priority=1"`},
		},
	}
	if !controlplane.ServesMutatingAdmissionPolicy() {
		// Before 1.36 the policy cannot be checked: the check warns and passes,
		// and metawatch would run the rule without atCreation.
		c := cases["a rule with atCreation, its policy compiled by the server"]
		c.want = []string{"warning: the cluster does not serve MutatingAdmissionPolicy", `metawatch runs rules "team" without atCreation`, "SUCCESS"}
		cases["a rule with atCreation, its policy compiled by the server"] = c
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"-f", writeConfig(t, tc.config)}, tc.flags...)
			if tc.kubeconfig {
				args = append(args, "--kubeconfig", cp.KubeconfigPath)
			}
			code, out := runCheck(t, args...)
			if code != tc.wantExit {
				t.Errorf("exit %d, want %d:\n%s", code, tc.wantExit, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not contain %q:\n%s", w, out)
				}
			}
		})
	}
}

// runCheck runs metawatch check with args, offline unless they give a
// kubeconfig (KUBECONFIG is emptied), and returns its exit code and its
// output, stdout and stderr together as a terminal shows them.
func runCheck(t *testing.T, args ...string) (int, string) {
	t.Helper()
	t.Setenv("KUBECONFIG", "")
	var out bytes.Buffer
	code := check.Run(t.Context(), args, &out, &out)
	return code, out.String()
}

// metawatch check, given the guardrail flags metawatch runs with, rejects
// what metawatch would, with the same messages: offline, and on the cluster.
func TestCheckAppliesTheGuardrails(t *testing.T) {
	controlplane.SkipIfShort(t)
	const watches = "watches:\n- kind: Pod\n- kind: Namespace\n- kind: Node\nrules:\n"
	cases := map[string]struct {
		rule  string
		flags []string
		want  string // empty: accepted
	}{
		"removing pod-template-hash": {rule: "{name: orphan, kinds: [Pod], removeLabels: [pod-template-hash]}",
			want: `rules[0].removeLabels[0]: Forbidden: rule "orphan" may not write pod-template-hash: --protected-keys protects it`},
		"a pod-security key on Namespaces": {
			rule: "{name: psa, kinds: [Namespace], setLabels: {pod-security.kubernetes.io/enforce: privileged}, reservedKeys: [pod-security.kubernetes.io/enforce]}",
			want: `rule "psa" may not write pod-security.kubernetes.io/enforce: --protected-keys protects it (pattern pod-security.kubernetes.io/*)`},
		"a cluster-scoped kind not enabled": {rule: "{name: spot, kinds: [Node], setLabels: {example.com/spot: 'true'}}", flags: []string{"--writable-kinds=*"},
			want: `rules[0].kinds[0]: Forbidden: rule "spot" may not write Node: it is cluster-scoped, and --writable-kinds=* allows namespaced kinds only`},
		"a reserved key not allowed": {rule: "{name: zone, kinds: [Pod], setLabels: {topology.kubernetes.io/zone: west}, reservedKeys: [topology.kubernetes.io/zone]}",
			want: `rules[0].reservedKeys[0]: Forbidden: rule "zone" may not write topology.kubernetes.io/zone: --allowed-reserved-keys allows none`},
		"atCreation not allowed": {rule: "{name: team, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}",
			want: `rules[0].atCreation: Forbidden: rule "team" may not apply its keys at creation`},
		"an atCreation value over the API server's CEL limit": {
			rule:  "{name: notes, kinds: [Pod], atCreation: true, setAnnotations: {example.com/notes: " + strings.Repeat("x", 120_000) + "}}",
			flags: []string{"--allow-at-creation"},
			want:  `rule "notes": the CEL expression of setAnnotations[example.com/notes] is 120`},
		"a cluster-scoped kind and a reserved key the operator allowed": {
			rule:  "{name: zone, kinds: [Node], setLabels: {topology.kubernetes.io/zone: west}, reservedKeys: [topology.kubernetes.io/zone]}",
			flags: []string{"--writable-kinds=Pod,Node", "--allowed-reserved-keys=topology.kubernetes.io/zone"}},
	}
	for name, tc := range cases {
		file := writeConfig(t, watches+"- "+tc.rule+"\n")
		for _, where := range []string{"offline", "on the cluster"} {
			t.Run(name+", "+where, func(t *testing.T) {
				args := append([]string{"-f", file}, tc.flags...)
				if where == "on the cluster" {
					args = append(args, "--kubeconfig", cp.KubeconfigPath)
				}
				code, out := runCheck(t, args...)
				wantExit, want := 1, tc.want
				if want == "" {
					wantExit, want = 0, "SUCCESS"
				}
				if code != wantExit || !strings.Contains(out, want) {
					t.Errorf("exit %d, want %d with %q:\n%s", code, wantExit, want, out)
				}
			})
		}
	}
}
