package main_test

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A writer that stalls past its claim (SIGSTOP, with its network held too:
// its proxy holds every request it has not sent on) while it has a backlog
// of writes (a slow client rate limit, 40 pods, a slow network): another
// replica takes over
// and converges a newer Namespace value; then the stalled one and its
// network resume. No pod version ever goes back to an older value (every
// version is watched), and the stalled replica sends no write after it
// resumed: a write admitted before the stall is checked again as it is sent
// (after the rate limiter) and its claim has lapsed. What was already in
// transit when it stopped reaches the server at resume; each such write
// carries a resourceVersion precondition, so one that would undo a newer
// write is refused. The residual window (from the claim's end, on the
// holder's clock, to its last request reaching the server) is logged.
func TestAStalledWriterWritesNothingAfterItResumes(t *testing.T) {
	controlplane.SkipIfShort(t)
	tests := map[string]struct {
		sharded  bool
		replicas int
	}{
		"with leader election, two replicas": {replicas: 2},
		"sharded, two replicas":              {sharded: true, replicas: 2},
		"sharded, three replicas":            {sharded: true, replicas: 3},
	}
	n := 0
	for name, tc := range tests {
		n++
		ns := fmt.Sprintf("stall-%d", n)
		t.Run(name, func(t *testing.T) {
			c := testkit.Client(t, cp.Config)
			teamNamespace(t, c, ns, "a", 40)
			var replicas []*shardedReplica
			var names []string
			for i := range tc.replicas {
				name := fmt.Sprintf("replica-%d", i)
				replicas, names = append(replicas, startStallReplica(t, ns, name, tc.sharded)), append(names, name)
				if !tc.sharded && i == 0 {
					waitHTTP200(t, "http://"+replicas[0].probe+"/readyz", replicas[0].stderr) // the first leads
				}
			}
			for _, r := range replicas {
				waitHTTP200(t, "http://"+r.probe+"/readyz", r.stderr)
			}
			waitPods(t, c, ns, "every pod to get team=a", func(l map[string]string) bool { return l["team"] == "a" })
			if tc.sharded {
				waitBucketsHeldAsAssigned(t, c, ns, names...)
			}
			teams := watchTeams(t, ns)

			stalled := replicas[0]
			changed := time.Now()
			patchNamespace(t, c, ns, "b")
			testkit.WaitFor(t, "the writer to start on its backlog", testkit.Timeout, func() bool { return len(stalled.podWrites(changed)) >= 3 })
			stoppedAt := stalled.stall(t)
			patchNamespace(t, c, ns, "c")
			waitPods(t, c, ns, "the other replicas to converge team=c while the writer is stalled", func(l map[string]string) bool { return l["team"] == "c" })
			time.Sleep(time.Second)
			resumedAt := stalled.resume(t)
			time.Sleep(6 * time.Second) // past the lease: whatever the resumed writer still sends, it has sent
			waitPods(t, c, ns, "every pod to still have team=c", func(l map[string]string) bool { return l["team"] == "c" })

			for _, v := range teams.violations() {
				t.Errorf("a pod's team went back to an older value or was lost: %s", v)
			}
			sentAfter, inTransit := stalled.writesAround(stoppedAt, resumedAt)
			for _, e := range sentAfter {
				t.Errorf("the stalled replica sent a write after it resumed: %s %s at %s (answered %d)", e.Method, e.Path, e.Received.Format(time.StampMilli), e.Status)
			}
			claimEnd := stalled.claimEnd(stoppedAt)
			residual := time.Duration(0)
			refused := 0
			for _, e := range inTransit {
				residual = max(residual, e.Sent.Sub(claimEnd))
				if e.Status == http.StatusConflict {
					refused++
				}
			}
			t.Logf("stalled %s after %d of its writes; %d writes were in transit at the stall and reached the server at resume (%d refused by their precondition); residual window past the claim's end: %s; writes sent after resume: %d",
				resumedAt.Sub(stoppedAt).Round(time.Millisecond), len(stalled.podWrites(changed))-len(inTransit), len(inTransit), refused, residual.Round(time.Millisecond), len(sentAfter))
		})
	}
}

// startStallReplica runs a replica behind a proxy of its own, with a slow
// write rate (and client rate limit) so that writes queue in them, and a slow network (each
// pod write takes 400 ms to reach the server) so that some are in transit
// when it stalls; sharded or with leader election.
func startStallReplica(t *testing.T, ns, name string, sharded bool) *shardedReplica {
	t.Helper()
	r := &shardedReplica{replica: newReplica(t), name: name, proxy: testkit.NewProxy(t, cp.Config), metrics: testkit.FreeAddress(t)}
	r.proxy.SetHold(func(req *http.Request) time.Duration {
		if req.Method == http.MethodPatch && strings.Contains(req.URL.Path, "/pods/") {
			return 400 * time.Millisecond
		}
		return 0
	})
	mode := []string{"--leader-elect"}
	if sharded {
		mode = []string{"--sharding"}
	}
	args := append([]string{"--kubeconfig", r.proxy.Kubeconfig, "--config-map", ns + "/selectors", "--leader-election-namespace", ns,
		"--health-probe-bind-address", r.probe, "--metrics-bind-address", r.metrics, "--metrics-secure=false", "--kube-api-qps", "4", "--kube-api-burst", "1", "--write-rate-min", "4", "--write-rate-max", "4"}, mode...)
	r.launch(t, []string{"POD_NAME=" + name}, append(args, leaseFlags...)...)
	return r
}

// stall stops the replica's process and holds its network; it returns when.
func (r *shardedReplica) stall(t *testing.T) time.Time {
	t.Helper()
	r.proxy.Pause()
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// resume lets the replica's process and network go on; it returns when.
func (r *shardedReplica) resume(t *testing.T) time.Time {
	t.Helper()
	at := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	r.proxy.Resume()
	return at
}

// writesAround are the replica's pod writes sent after resumedAt, and those
// it had sent before stoppedAt that reached the server only after resumedAt.
func (r *shardedReplica) writesAround(stoppedAt, resumedAt time.Time) (sentAfter, inTransit []testkit.Exchange) {
	for _, e := range r.proxy.Exchanges() {
		if e.Method != http.MethodPatch || !strings.Contains(e.Path, "/pods/") {
			continue
		}
		switch {
		case !e.Received.Before(resumedAt):
			sentAfter = append(sentAfter, e)
		case e.Received.Before(stoppedAt) && !e.Sent.Before(resumedAt):
			inTransit = append(inTransit, e)
		}
	}
	return sentAfter, inTransit
}

// claimEnd is when the replica's claim ended on its clock (as the proxy saw
// it, on the same machine): the renew deadline after the last successful
// write of its Lease (the leader's, or its member Lease) sent before at.
func (r *shardedReplica) claimEnd(at time.Time) time.Time {
	var last time.Time
	for _, e := range r.proxy.Exchanges() {
		if e.Method == http.MethodPut && strings.Contains(e.Path, "/leases/") && !strings.Contains(e.Path, "-bucket-") &&
			e.Status == http.StatusOK && e.Received.Before(at) && e.Received.After(last) {
			last = e.Received
		}
	}
	return last.Add(3 * time.Second) // leaseFlags' renew deadline
}

// One of two sharded replicas has its writes of bucket Leases refused (500)
// for longer than twice the lease duration while a third replica joins and
// leaves again: it must hand buckets on and cannot release them, then they
// are assigned back to it. Once the refusals end, every bucket is held by its
// assigned replica, none is reported unwritable, and a Namespace change
// reaches every pod. Before, the buckets whose release had failed stayed
// unwritable until a restart, and /readyz and the metrics looked healthy.
func TestAFailedHandOverLeavesNoBucketUnwritten(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "failed-handover"
	a, b, history := twoShardedReplicas(t, c, ns)

	bucketLeaseWrite := func(method, path string) bool {
		return method == http.MethodPut && strings.Contains(path, "/leases/") && strings.Contains(path, "-bucket-")
	}
	refusedFrom := len(a.proxy.Exchanges())
	a.proxy.SetRefuse(func(req *http.Request) bool { return bucketLeaseWrite(req.Method, req.URL.Path) })
	joiner := startShardedReplica(t, ns, "replica-c")
	waitHTTP200(t, "http://"+joiner.probe+"/readyz", joiner.stderr)
	// A balanced replica writes no bucket Lease: the first one refused is
	// replica-a handing buckets on to replica-c, and failing to release them.
	testkit.WaitFor(t, "replica-a to try to hand buckets on, and be refused", testkit.Timeout, func() bool {
		for _, e := range a.proxy.Exchanges()[refusedFrom:] {
			if bucketLeaseWrite(e.Method, e.Path) {
				return true
			}
		}
		return false
	})
	joiner.stop(t, syscall.SIGTERM)
	// Past twice the lease duration (4 s) with the buckets assigned back, they are reported.
	var unwritable float64
	testkit.WaitFor(t, "replica-a to report the buckets it cannot confirm as unwritable", testkit.Timeout, func() bool {
		unwritable = a.metric("metawatch_buckets_unwritable")
		return unwritable > 0
	})
	a.proxy.SetRefuse(nil)

	waitBucketsHeldAsAssigned(t, c, ns, "replica-a", "replica-b")
	patchNamespace(t, c, ns, "b")
	waitPods(t, c, ns, "the namespace change to reach every pod once the refusals ended", func(l map[string]string) bool { return l["team"] == "b" })
	testkit.WaitFor(t, "no bucket reported unwritable", testkit.Timeout, func() bool {
		return a.metric("metawatch_buckets_unwritable") == 0 && b.metric("metawatch_buckets_unwritable") == 0
	})
	t.Logf("replica-a reported %v buckets unwritable during the refusals", unwritable)
	for _, v := range history.violations() {
		t.Errorf("a pod's team went back or was lost: %s", v)
	}
	assertNoConcurrentWriters(t, a.podWrites(time.Time{}), b.podWrites(time.Time{}))
}

// Every Lease write of one of two sharded replicas is refused (500: a
// failing admission webhook on Leases, etcd out of space) for twice the
// lease duration, then accepted again: the replica stops writing, the other
// takes its buckets, and once it renews it gets its share back. Afterwards
// every bucket is held by its assigned replica and a Namespace change reaches
// every pod; no pod is written by both at once, none goes back.
func TestARingRecoversFromRefusedLeaseWrites(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "lease-outage"
	a, b, history := twoShardedReplicas(t, c, ns)

	a.proxy.SetRefuse(func(req *http.Request) bool {
		return (req.Method == http.MethodPut || req.Method == http.MethodPost) && strings.Contains(req.URL.Path, "/leases")
	})
	waitBucketsHeldAsAssigned(t, c, ns, "replica-b") // replica-a counted dead: replica-b holds everything
	patchNamespace(t, c, ns, "b")
	waitPods(t, c, ns, "replica-b to converge team=b during the outage", func(l map[string]string) bool { return l["team"] == "b" })
	a.proxy.SetRefuse(nil)

	recovered := time.Now()
	waitBucketsHeldAsAssigned(t, c, ns, "replica-a", "replica-b")
	t.Logf("the ring was balanced again %s after replica-a's Lease writes were accepted again", time.Since(recovered).Round(10*time.Millisecond))
	patchNamespace(t, c, ns, "c")
	waitPods(t, c, ns, "the namespace change to reach every pod after the outage", func(l map[string]string) bool { return l["team"] == "c" })
	testkit.WaitFor(t, "no bucket reported unwritable", testkit.Timeout, func() bool {
		return a.metric("metawatch_buckets_unwritable") == 0 && b.metric("metawatch_buckets_unwritable") == 0
	})
	for _, v := range history.violations() {
		t.Errorf("a pod's team went back or was lost: %s", v)
	}
	assertNoConcurrentWriters(t, a.podWrites(time.Time{}), b.podWrites(time.Time{}))
}

// twoShardedReplicas runs replica-a and replica-b, sharded, on namespace ns
// with 40 pods and team=a, waits until they have converged it and hold their
// buckets, and watches every version of the pods' team from then on.
func twoShardedReplicas(t *testing.T, c client.Client, ns string) (a, b *shardedReplica, history *teams) {
	t.Helper()
	teamNamespace(t, c, ns, "a", 40)
	a, b = startShardedReplica(t, ns, "replica-a"), startShardedReplica(t, ns, "replica-b")
	for _, r := range []*shardedReplica{a, b} {
		waitHTTP200(t, "http://"+r.probe+"/readyz", r.stderr)
	}
	waitPods(t, c, ns, "every pod to get team=a", func(l map[string]string) bool { return l["team"] == "a" })
	waitBucketsHeldAsAssigned(t, c, ns, "replica-a", "replica-b")
	return a, b, watchTeams(t, ns)
}
