package rulecontroller_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Two installations (two teams, two configurations) each set a key of their
// own on the same pods, each as its own field manager: both keys stay, and
// once converged neither writes again, started anew or not. As one field
// manager, each apply replaced the other's owned set: no pod ever carried
// both keys, and the two wrote without end.
func TestTwoInstallationsKeepTheirOwnKeys(t *testing.T) {
	controlplane.SkipIfShort(t)
	ns := "two-installations"
	c := testkit.Populated(t, cp, ns, nil, 20)
	configOf := func(key string) string {
		return fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: %s, kinds: [Pod], setLabels: {%s: \"yes\"}}\n", ns, key, key)
	}
	start := func() (a, b *instance) {
		a = startInstance(t, configOf("team-a"), settings{Options: rulecontroller.Options{FieldManager: "metawatch-team-a"}})
		b = startInstance(t, configOf("team-b"), settings{Options: rulecontroller.Options{FieldManager: "metawatch-team-b"}})
		return a, b
	}
	a, b := start()
	both := func(_ string, l map[string]string) bool { return l["team-a"] == "yes" && l["team-b"] == "yes" }
	waitAllPods(t, c, "both installations' keys on every pod", []string{ns}, both)
	for _, p := range podsIn(t, c, ns) {
		if owners := keyManagers(testkit.KeyTypes["labels"], p, "team-a", "team-b"); owners["team-a"] != "metawatch-team-a" || owners["team-b"] != "metawatch-team-b" {
			t.Errorf("%s: each key should be owned by its installation's field manager alone: %v", p.Name, owners)
		}
	}
	a.stop()
	b.stop()

	a, b = start()
	waitCached(t, a, []string{ns}, 20)
	waitCached(t, b, []string{ns}, 20)
	waitAllPods(t, c, "both keys still on every pod", []string{ns}, both)
	if n := a.writes.Load() + b.writes.Load(); n != 0 {
		t.Errorf("the converged installations wrote %d times after a restart, want 0", n)
	}
}

func podsIn(t *testing.T, c client.Client, ns string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// keyManagers names, for each of keys, the field managers that own the key
// of kt on pod, joined by commas.
func keyManagers(kt testkit.KeyType, pod corev1.Pod, keys ...string) map[string]string {
	out := map[string]string{}
	for _, f := range pod.ManagedFields {
		if f.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata map[string]map[string]json.RawMessage `json:"f:metadata"`
		}
		if json.Unmarshal(f.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		for _, k := range keys {
			if _, owns := fields.Metadata["f:"+kt.Field]["f:"+k]; owns {
				out[k] = strings.TrimPrefix(out[k]+","+f.Manager, ",")
			}
		}
	}
	return out
}
