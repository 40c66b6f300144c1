package config_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

const guardWatches = "watches:\n- kind: Pod\n- kind: Namespace\n- kind: Node\n- kind: Deployment\n- kind: Widget\n"

func TestGuardrailsRejectWhatTheOperatorDidNotAllow(t *testing.T) {
	for name, tc := range map[string]struct {
		rules string
		flags []string
		want  []string // each in the error; none: within the limits
	}{
		"removing pod-template-hash is refused by default": {
			rules: "- {name: orphan, kinds: [Pod], removeLabels: [pod-template-hash]}",
			want:  []string{`rules[0].removeLabels[0]: Forbidden: rule "orphan" may not write pod-template-hash: --protected-keys protects it (pattern pod-template-hash)`},
		},
		"a pod-security key on Namespaces names both the kind and the key": {
			rules: "- {name: psa, kinds: [Namespace], setLabels: {pod-security.kubernetes.io/enforce: privileged}, reservedKeys: [pod-security.kubernetes.io/enforce]}",
			want: []string{`rules[0].kinds[0]: Forbidden: rule "psa" may not write Namespace: --writable-kinds allows Pod,Deployment`,
				`rules[0].setLabels[pod-security.kubernetes.io/enforce]: Forbidden: rule "psa" may not write pod-security.kubernetes.io/enforce: --protected-keys protects it (pattern pod-security.kubernetes.io/*)`},
		},
		"a cluster-scoped kind is not covered by the wildcard": {
			rules: "- {name: spot, kinds: [Node], setLabels: {example.com/spot: 'true'}}",
			flags: []string{"--writable-kinds=*"},
			want:  []string{`rules[0].kinds[0]: Forbidden: rule "spot" may not write Node: it is cluster-scoped, and --writable-kinds=* allows namespaced kinds only`},
		},
		"a cluster-scoped kind named by the operator is writable": {
			rules: "- {name: spot, kinds: [Node], setLabels: {example.com/spot: 'true'}}",
			flags: []string{"--writable-kinds=Pod,Node"},
		},
		"the wildcard allows a namespaced kind": {
			rules: "- {name: dep, kinds: [Deployment, Pod], setAnnotations: {example.com/owner: a}}",
			flags: []string{"--writable-kinds=*"},
		},
		"a kind whose scope is unknown offline is not covered by the wildcard": {
			rules: "- {name: w, kinds: [Widget], setLabels: {a: b}}",
			flags: []string{"--writable-kinds=*"},
			want:  []string{"offline whether it is namespaced is unknown"},
		},
		"at creation is refused unless the operator allows it": {
			rules: "- {name: team, kinds: [Pod], atCreation: true, setLabels: {team: red}}",
			want:  []string{`rules[0].atCreation: Forbidden: rule "team" may not apply its keys at creation`, "--allow-at-creation (chart: atCreation.enabled: true)"},
		},
		"at creation allowed by the operator": {
			rules: "- {name: team, kinds: [Pod], atCreation: true, setLabels: {team: red}}",
			flags: []string{"--allow-at-creation"},
		},
		"a reserved key the operator did not allow is refused at the opt-in": {
			rules: "- {name: zone, kinds: [Pod], setLabels: {topology.kubernetes.io/zone: west}, reservedKeys: [topology.kubernetes.io/zone]}",
			want:  []string{`rules[0].reservedKeys[0]: Forbidden: rule "zone" may not write topology.kubernetes.io/zone: --allowed-reserved-keys allows none`},
		},
		"a reserved key the operator allowed by prefix is written": {
			rules: "- {name: zone, kinds: [Pod], setLabels: {topology.kubernetes.io/zone: west}, reservedKeys: [topology.kubernetes.io/zone]}",
			flags: []string{"--allowed-reserved-keys=topology.kubernetes.io/*"},
		},
		"an allowed reserved key that is protected stays protected": {
			rules: "- {name: psa, kinds: [Pod], setLabels: {pod-security.kubernetes.io/enforce: baseline}, reservedKeys: [pod-security.kubernetes.io/enforce]}",
			flags: []string{"--allowed-reserved-keys=*"},
			want:  []string{"--protected-keys protects it (pattern pod-security.kubernetes.io/*)"},
		},
		"the operator may lift a protection by replacing the list": {
			rules: "- {name: psa, kinds: [Namespace], setLabels: {pod-security.kubernetes.io/enforce: baseline}, reservedKeys: [pod-security.kubernetes.io/enforce]}",
			flags: []string{"--protected-keys=pod-template-hash", "--allowed-reserved-keys=pod-security.kubernetes.io/enforce", "--writable-kinds=Namespace"},
		},
		"a protected prefix in capitals is the same prefix": {
			rules: "- {name: lac, kinds: [Pod], setAnnotations: {Kubectl.Kubernetes.io/last-applied-configuration: x}, reservedKeys: [Kubectl.Kubernetes.io/last-applied-configuration]}",
			flags: []string{"--allowed-reserved-keys=*"},
			want:  []string{"may not write Kubectl.Kubernetes.io/last-applied-configuration: --protected-keys protects it (pattern kubectl.kubernetes.io/*)"},
		},
		"a protected prefix all in capitals is the same prefix": {
			rules: "- {name: psa, kinds: [Pod], setAnnotations: {POD-SECURITY.KUBERNETES.IO/enforce: privileged}, reservedKeys: [POD-SECURITY.KUBERNETES.IO/enforce]}",
			flags: []string{"--allowed-reserved-keys=*"},
			want:  []string{"may not write POD-SECURITY.KUBERNETES.IO/enforce: --protected-keys protects it (pattern pod-security.kubernetes.io/*)"},
		},
		"copying a protected key from the namespace is a write": {
			rules: "- {name: copy, kinds: [Pod], copyFromNamespace: {labels: [job-name]}}",
			want:  []string{`rules[0].copyFromNamespace.labels[0]: Forbidden: rule "copy" may not write job-name`},
		},
		"an audit reads protected keys and unwritable kinds freely": {
			rules: "- {name: audit, kinds: [Node], requireLabels: [pod-template-hash, kubernetes.io/hostname]}",
		},
		"no writable kinds leaves audits only": {
			rules: "- {name: r, kinds: [Pod], setLabels: {a: b}}",
			flags: []string{"--writable-kinds="},
			want:  []string{"--writable-kinds allows none"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(guardWatches + "rules:\n" + tc.rules + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			limits := guardrailsFromFlags(t, tc.flags...)
			testkit.WantInvalid(t, limits.Check(c, config.OfflineScope(c)), tc.want...)
		})
	}
}

func guardrailsFromFlags(t testing.TB, args ...string) config.Guardrails {
	t.Helper()
	limits := config.DefaultGuardrails()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	limits.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return limits
}

func TestGuardrailFlagsRefuseWhatIsNotAKeyOrAKind(t *testing.T) {
	for name, tc := range map[string]struct{ arg, want string }{
		"a kind in lower case":    {"--writable-kinds=pods", `"pods" is not a kind`},
		"a key with two slashes":  {"--protected-keys=a/b/c", `"a/b/c" is not a label or annotation key`},
		"a prefix that is no DNS": {"--allowed-reserved-keys=Foo_Bar/*", `"Foo_Bar/*": the part before /* must be a key prefix`},
		"a namespace in capitals": {"--write-namespaces=Kube-System", `"Kube-System" is not a namespace name`},
	} {
		t.Run(name, func(t *testing.T) {
			limits := config.DefaultGuardrails()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			var out strings.Builder
			fs.SetOutput(&out)
			limits.BindFlags(fs)
			err := fs.Parse([]string{tc.arg})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
			if got := strings.Join(limits.WritableKinds, ","); got != "Pod,Deployment" && !strings.HasPrefix(tc.arg, "--writable-kinds") {
				t.Errorf("a bad flag changed another limit: writable kinds %s", got)
			}
		})
	}
}

// A flag set twice adds to the first; set once, it replaces the default.
func TestGuardrailFlagsReplaceTheDefaultThenAdd(t *testing.T) {
	limits := guardrailsFromFlags(t, "--protected-keys=a", "--protected-keys=b,c/*")
	if got := strings.Join(limits.ProtectedKeys, ","); got != "a,b,c/*" {
		t.Errorf("protected keys = %s, want a,b,c/*", got)
	}
	if got := strings.Join(config.DefaultGuardrails().ProtectedKeys, ","); !strings.Contains(got, "pod-template-hash") {
		t.Errorf("setting the flag changed the default list: %s", got)
	}
}
