package rulecontroller_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Two installations (two teams, two configurations) each set a key of their
// own on the same pods, each as the field manager the chart derives for its
// release by default: both keys stay, and once converged neither writes
// again, started anew or not. As one field manager, each apply replaced the
// other's owned set: no pod ever carried both keys, and the two wrote
// without end.
func TestTwoInstallationsKeepTheirOwnKeys(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns, n := "two-installations-"+name, fightPods()
			c := testkit.Populated(t, cp, ns, nil, n)
			configOf := func(key string) string {
				return fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: %s, kinds: [Pod], %s: {%s: \"yes\"}}\n", ns, key, kt.Set, key)
			}
			// What the chart renders for releases team-a and team-b, each in its namespace.
			managerA, managerB := "metawatch/team-a/team-a", "metawatch/team-b/team-b"
			start := func() (a, b *instance) {
				a = startInstance(t, configOf("team-a"), tuned(func(s *settings.Settings) { s.Identity = authority.NewIdentity(managerA, "") }))
				b = startInstance(t, configOf("team-b"), tuned(func(s *settings.Settings) { s.Identity = authority.NewIdentity(managerB, "") }))
				return a, b
			}
			a, b := start()
			testkit.WaitFor(t, "both installations' keys on every pod", 10*time.Minute, func() bool {
				return kt.CountPods(t, c, ns, "team-a", "yes") == n && kt.CountPods(t, c, ns, "team-b", "yes") == n
			})
			converged := a.writes.Load() + b.writes.Load()
			for _, p := range podsIn(t, c, ns) {
				if owners := keyManagers(kt, p, "team-a", "team-b"); owners["team-a"] != managerA || owners["team-b"] != managerB {
					t.Errorf("%s: each key should be owned by its installation's field manager alone: %v", p.Name, owners)
				}
			}
			a.stop()
			b.stop()

			a, b = start()
			waitCached(t, a, []string{ns}, n)
			waitCached(t, b, []string{ns}, n)
			if got := kt.CountPods(t, c, ns, "team-a", "yes") + kt.CountPods(t, c, ns, "team-b", "yes"); got != 2*n {
				t.Errorf("%d keys on the pods after a restart, want both on all %d", got, n)
			}
			if w := a.writes.Load() + b.writes.Load(); w != 0 {
				t.Errorf("the converged installations wrote %d times after a restart, want 0", w)
			}
			t.Logf("%ss, %d pods: two installations as their releases' field managers converged in %d writes (%.2f per pod and installation), "+
				"both keys on every pod, then 0 writes after both restarted", kt.Name, n, converged, float64(converged)/float64(2*n))
		})
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
