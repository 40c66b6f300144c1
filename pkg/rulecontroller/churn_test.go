package rulecontroller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
	"github.com/metawatch/metawatch/pkg/wire"
)

// nobody reads the newest resourceVersions: every write's precondition is
// the cached object's, as before the streams' versions were kept.
type nobody struct{}

func (nobody) Newest(_ types.UID, cached string) string { return cached }

// A rule that removes a label and sets another converges on pods whose
// status keeps changing between the event metawatch decided on and its
// write: status-only updates are left out before decoding, so the cached
// object's resourceVersion is behind the server's, and a precondition built
// from it failed on every retry (14 of 20 pods kept the label after 90 s).
// Every write carries the newest resourceVersion the watch stream carried;
// a precondition that fails anyway (the status changed meanwhile) is decided
// again on the object as it is now; and a remove that fails does not hold
// back the keys the rule sets.
func TestRemovesConvergeUnderStatusChurn(t *testing.T) {
	controlplane.SkipIfShort(t)
	tests := map[string]struct {
		mopts metamanager.Options
		opts  tuning
		// chartVerbs runs metawatch as an identity with only the verbs the
		// chart grants: list, watch and patch on pods (no get), Events.
		chartVerbs bool
	}{
		"with unchanged events left out (the default)":                               {},
		"with unchanged events left out and no stream versions (the 409 path alone)": {opts: tuning{Wiring: rulecontroller.Wiring{Versions: nobody{}}}},
		"the 409 path alone, with only the chart's verbs":                            {opts: tuning{Wiring: rulecontroller.Wiring{Versions: nobody{}}}, chartVerbs: true},
		"with every event decoded":                                                   {mopts: metamanager.Options{Wire: wire.Options{DecodeUnchanged: true}}},
	}
	n := 0
	for name, tc := range tests {
		n++
		ns := fmt.Sprintf("churn-%d", n)
		t.Run(name, func(t *testing.T) {
			c := testkit.Client(t, cp.Config)
			testkit.Namespace(t, c, ns, nil)
			gate := make(chan struct{})
			tc.opts.Gate = gate
			var as func(*rest.Config) *rest.Config
			if tc.chartVerbs {
				as = withOnlyChartVerbs(t, c, ns)
			}
			inst := startInstanceWith(t, "watches:\n- kind: Pod\n  namespaces: ["+ns+"]\nrules:\n- name: churn\n  kinds: [Pod]\n  removeLabels: [stale]\n  setLabels: {tier: gold}\n",
				tc.opts, tc.mopts, as)
			pods := make([]*corev1.Pod, 20)
			for i := range pods {
				pods[i] = testkit.Pod(t, c, ns, fmt.Sprintf("p-%d", i), map[string]string{"stale": "yes"})
			}
			waitCached(t, inst, []string{ns}, len(pods))
			for _, p := range pods {
				updateStatusTimes(t, c, p, 1) // what a scheduler binding or a kubelet report does to a new pod
			}
			stop := churnStatus(t, c, pods, 200*time.Millisecond)
			close(gate) // the controllers decide on the cached objects, whose status moved on
			waitAllPods(t, c, "the stale label removed and tier set on every pod under status churn", []string{ns}, func(_ string, l map[string]string) bool {
				_, stale := l["stale"]
				return !stale && l["tier"] == "gold"
			})
			t.Logf("%d status updates during convergence", stop())
		})
	}
}

// churnStatus updates the status of every pod every interval, from its own
// goroutine, until the returned function is called, which says how many
// updates were made.
func churnStatus(t *testing.T, c client.Client, pods []*corev1.Pod, interval time.Duration) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var mu sync.Mutex
	updates := 0
	for _, p := range pods {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				var pod corev1.Pod
				if err := c.Get(ctx, client.ObjectKeyFromObject(p), &pod); err != nil {
					return
				}
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Message: fmt.Sprint("churn ", i)}}
				if c.Status().Update(ctx, &pod) == nil {
					mu.Lock()
					updates++
					mu.Unlock()
				}
				select {
				case <-ctx.Done():
				case <-time.After(interval):
				}
			}
		})
	}
	var once sync.Once
	stop = func() int {
		once.Do(func() { cancel(); wg.Wait() })
		mu.Lock()
		defer mu.Unlock()
		return updates
	}
	t.Cleanup(func() { stop() })
	return stop
}

// withOnlyChartVerbs makes a ServiceAccount in ns with what the chart's
// ClusterRole grants for a Pod rule (list, watch and patch on pods, Events)
// and returns a wrap that makes a client config act as it.
func withOnlyChartVerbs(t *testing.T, c client.Client, ns string) func(*rest.Config) *rest.Config {
	t.Helper()
	name := ns + "-chart-verbs"
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}}},
	} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return func(cfg *rest.Config) *rest.Config {
		cfg = rest.CopyConfig(cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name}
		return cfg
	}
}
