package main_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A warm standby (--warm-standby) syncs its cache and becomes Ready while
// another replica holds the Lease, writes nothing while it does (a namespace
// change it has cached and queued waits), and writes as soon as it holds the
// Lease: the change converges without a sync after the election. The time
// from the Lease lapsing to the last pod is logged.
func TestWarmStandbyWritesOnlyOnceItLeads(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "warm-standby"
	testkit.Namespace(t, c, ns, map[string]string{"team": "a"})
	for i := range 10 {
		testkit.Pod(t, c, ns, fmt.Sprintf("p-%d", i), nil)
	}
	applySelectors(t, c, ns, "watches:\n- kind: Pod\n  namespaces: [warm-standby]\nrules:\n- name: warm-team\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n")
	other := holdLease(t, c, ns, metamanager.DefaultLeaderElectionID)
	history := watchHistory(t, ns, func(l map[string]string) bool { return l["team"] == "" })

	standby, metrics := newReplica(t), testkit.FreeAddress(t)
	standby.launch(t, nil, append([]string{"--kubeconfig", cp.KubeconfigPath, "--config-map", ns + "/selectors", "--leader-elect", "--warm-standby",
		"--leader-election-namespace", ns, "--health-probe-bind-address", standby.probe, "--metrics-bind-address", metrics, "--metrics-secure=false"}, leaseFlags...)...)
	waitHTTP200(t, "http://"+standby.probe+"/readyz", standby.stderr)
	if !strings.Contains(standby.stderr.String(), "held until this standby leads") {
		t.Errorf("the standby is Ready, but did not say its generation runs with its writes held:\n%s", standby.stderr.String())
	}

	patchNamespace(t, c, ns, "b")
	time.Sleep(3 * time.Second) // the standby has the change cached and queued by now, and must not write it
	for _, v := range history.violations() {
		t.Errorf("the standby wrote while another replica held the Lease: %s", v)
	}
	// Nor does it say anything on the ConfigMap: the leader does.
	var events eventsv1.EventList
	if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.ReportingController == rulecontroller.EventSource {
			t.Errorf("the standby recorded an Event before it leads: %s %s", e.Reason, e.Note)
		}
	}
	// Nor does it queue what it would write: a standby's queue would only grow.
	code, body, err := testkit.Get(t.Context(), http.DefaultClient, "http://"+metrics+"/metrics", "", false)
	if err != nil || code != http.StatusOK {
		t.Fatalf("scraping the standby: %d %v", code, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, `workqueue_adds_total{controller="pod"`) && !strings.HasSuffix(line, " 0") {
			t.Errorf("the standby queued work before it leads: %s", line)
		}
	}

	lapsed := other.release()
	waitPods(t, c, ns, "the standby to write once it leads", func(l map[string]string) bool { return l["team"] == "b" })
	t.Logf("warm standby: the namespace change reached all 10 pods %s after the Lease was last renewed (lease 4s, retry 500ms)",
		time.Since(lapsed).Round(10*time.Millisecond))
}

// leaseHolder renews a Lease in the name of another replica until released.
type leaseHolder struct {
	stop    atomic.Bool
	stopped chan time.Time
}

// holdLease takes Lease ns/name for a replica "another-replica" and renews
// it every 500ms, as a live leader with leaseFlags' timings would.
func holdLease(t *testing.T, c client.Client, ns, name string) *leaseHolder {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To[int32](4), AcquireTime: &now, RenewTime: &now}}
	if err := c.Create(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	h := &leaseHolder{stopped: make(chan time.Time, 1)}
	go func() {
		last := time.Now()
		defer func() { h.stopped <- last }()
		for !h.stop.Load() && t.Context().Err() == nil {
			time.Sleep(500 * time.Millisecond)
			renewed := metav1.NewMicroTime(time.Now())
			lease.Spec.RenewTime = &renewed
			if err := c.Update(t.Context(), lease); err != nil {
				t.Errorf("renewing the other replica's Lease: %v", err)
				return
			}
			last = renewed.Time
		}
	}()
	return h
}

// release stops renewing and returns when the Lease was last renewed.
func (h *leaseHolder) release() time.Time {
	h.stop.Store(true)
	return <-h.stopped
}
