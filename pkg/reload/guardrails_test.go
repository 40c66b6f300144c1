package reload_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

const guardWatches = "watches:\n- kind: Pod\n  namespaces: [guard]\n- kind: Namespace\n  labelSelector: guard\n- kind: Node\n  labelSelector: guard\n" +
	"rules:\n- {name: live-tier, kinds: [Pod], setLabels: {tier: gold}}\n"

// A ConfigMap edit that asks for more than the operator's limits (flags, here
// their defaults) is rejected as a whole with an InvalidConfig Event naming
// the rule, the key or kind and the flag; nothing is written, and the running
// configuration keeps converging live changes.
func TestGuardrailsRejectEditsThatAskForMore(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "guard", map[string]string{"guard": "yes"})
	testkit.Pod(t, c, "guard", "web", map[string]string{"pod-template-hash": "5d4f8c"})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "guard-node", Labels: map[string]string{"guard": "yes"}}}
	if err := c.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	kubectlApply(t, selectors("guard", guardWatches))
	startInstance(t, cp.Config, "guard/selectors") // Reloader.Settings nil: the defaults, as metawatch without guardrail flags
	testkit.WaitFor(t, "the good configuration to label the pod", testkit.Timeout, func() bool { return podLabel(t, c, "guard", "web", "tier") == "gold" })

	for i, edit := range []struct{ name, rule, want string }{
		{"removing pod-template-hash", "{name: orphan, kinds: [Pod], removeLabels: [pod-template-hash]}",
			`rules[1].removeLabels[0]: Forbidden: rule "orphan" may not write pod-template-hash: --protected-keys protects it`},
		{"a pod-security key on Namespaces",
			"{name: psa, kinds: [Namespace], setLabels: {pod-security.kubernetes.io/enforce: privileged}, reservedKeys: [pod-security.kubernetes.io/enforce]}",
			`rule "psa" may not write pod-security.kubernetes.io/enforce: --protected-keys protects it (pattern pod-security.kubernetes.io/*)`},
		{"a cluster-scoped kind not enabled", "{name: spot, kinds: [Node], setLabels: {example.com/spot: 'true'}}",
			`rules[1].kinds[0]: Forbidden: rule "spot" may not write Node: --writable-kinds allows Pod,Deployment`},
		{"a reserved key not allowed", "{name: zone, kinds: [Pod], setLabels: {topology.kubernetes.io/zone: west}, reservedKeys: [topology.kubernetes.io/zone]}",
			`rules[1].reservedKeys[0]: Forbidden: rule "zone" may not write topology.kubernetes.io/zone: --allowed-reserved-keys allows none`},
	} {
		t.Run(edit.name, func(t *testing.T) {
			kubectlApply(t, selectors("guard", guardWatches+"- "+edit.rule+"\n"))
			testkit.WaitFor(t, "an InvalidConfig Event with "+edit.want, testkit.Timeout, func() bool { return eventWith(t, c, "guard", reload.ReasonInvalidConfig, edit.want) })
			// A hand edit on a pod of its own each time: a key removed again
			// and again on one object is a fight, left to the other side.
			pod, color := fmt.Sprintf("hand-%d", i), fmt.Sprintf("c%d", i)
			testkit.Pod(t, c, "guard", pod, nil)
			testkit.WaitFor(t, "the running configuration to label "+pod, testkit.Timeout, func() bool { return podLabel(t, c, "guard", pod, "tier") == "gold" })
			testkit.MergePatch(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "guard", Name: pod}}, "kubectl-label",
				fmt.Sprintf(`{"metadata":{"labels":{"tier":null,"color":%q}}}`, color))
			testkit.WaitFor(t, "the running configuration to put the tier back", testkit.Timeout, func() bool {
				return podLabel(t, c, "guard", pod, "color") == color && podLabel(t, c, "guard", pod, "tier") == "gold"
			})
			assertUntouched(t, c)
		})
	}
}

// assertUntouched checks that no rule the guardrails refused has written.
func assertUntouched(t *testing.T, c client.Client) {
	t.Helper()
	pod := podLabels(t, c, "guard", "web")
	if pod["pod-template-hash"] != "5d4f8c" || pod["topology.kubernetes.io/zone"] != "" {
		t.Errorf("a refused rule wrote the pod: %v", pod)
	}
	var ns corev1.Namespace
	var node corev1.Node
	if err := c.Get(t.Context(), client.ObjectKey{Name: "guard"}, &ns); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "guard-node"}, &node); err != nil {
		t.Fatal(err)
	}
	if v, ok := ns.Labels["pod-security.kubernetes.io/enforce"]; ok {
		t.Errorf("a refused rule set pod-security.kubernetes.io/enforce=%s on the namespace", v)
	}
	if v, ok := node.Labels["example.com/spot"]; ok {
		t.Errorf("a refused rule set example.com/spot=%s on the node", v)
	}
}

// What the operator allows by flag, a ConfigMap may then use: the guardrails
// take nothing away from a configuration within them.
func TestGuardrailsLetThroughWhatTheOperatorAllows(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "allowed-node", Labels: map[string]string{"allowed": "yes"}}}
	if err := c.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	testkit.Namespace(t, c, "allowed", nil)
	kubectlApply(t, selectors("allowed", "watches:\n- kind: Node\n  labelSelector: allowed\n"+
		"rules:\n- {name: zone, kinds: [Node], setLabels: {topology.kubernetes.io/zone: west}, reservedKeys: [topology.kubernetes.io/zone]}\n"))
	startInstance(t, cp.Config, "allowed/selectors", func(r *reload.Reloader) {
		limits := config.DefaultGuardrails() // as --writable-kinds=Pod,Node --allowed-reserved-keys=topology.kubernetes.io/*
		limits.WritableKinds, limits.AllowedReservedKeys = []string{"Pod", "Node"}, []string{"topology.kubernetes.io/*"}
		r.Settings.Guardrails = limits
	})
	testkit.WaitFor(t, "the rule the operator allowed to label the node", testkit.Timeout, func() bool {
		var got corev1.Node
		return c.Get(t.Context(), client.ObjectKey{Name: "allowed-node"}, &got) == nil && got.Labels["topology.kubernetes.io/zone"] == "west"
	})
}

// A rule with atCreation whose admission policy the API server would refuse
// (a CEL expression over its limit) is rejected before it runs, as metawatch
// check rejects it, and the running configuration stays.
func TestGuardrailsRejectAtCreationOverTheCELLimit(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "celsize", nil)
	good := "watches:\n- kind: Pod\nwriteScope: {namespaces: [celsize]}\n" +
		"rules:\n- {name: celsize-notes, kinds: [Pod], atCreation: true, setAnnotations: {example.com/notes: short}}\n"
	kubectlApply(t, selectors("celsize", good))
	startInstance(t, cp.Config, "celsize/selectors", func(r *reload.Reloader) {
		limits := config.DefaultGuardrails() // as --allow-at-creation
		limits.AtCreation = true
		r.Settings.Guardrails = limits
	})
	kubectlApply(t, selectors("celsize", strings.Replace(good, "short", strings.Repeat("x", 120_000), 1)))
	want := `rule "celsize-notes": the CEL expression of setAnnotations[example.com/notes] is 120`
	testkit.WaitFor(t, "an InvalidConfig Event with "+want, testkit.Timeout, func() bool {
		return eventWith(t, c, "celsize", reload.ReasonInvalidConfig, want)
	})
}
