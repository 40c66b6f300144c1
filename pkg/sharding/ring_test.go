package sharding

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }

// testOptions are short durations, so that expiry takes seconds.
func testOptions(identity string) Options {
	return Options{Namespace: "default", Ring: "test", Identity: identity,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
}

// replica is a Ring run by the test, with writers that write to random
// buckets for as long as the ring admits them.
type replica struct {
	ring       *Ring
	stopLoop   context.CancelFunc // ends the renewals: a kill -9 when stop is not run after
	graceful   chan struct{}
	stopWrites context.CancelFunc
}

// maxReplicas is the most replicas one test starts.
const maxReplicas = 4

// writes counts, per bucket and replica, the writes in flight.
type writes struct {
	inflight [Buckets][maxReplicas]atomic.Int32
	overlaps atomic.Int32
	changes  atomic.Int32       // OnChange calls, every replica's
	uids     [Buckets]types.UID // one uid per bucket
}

func newWrites() *writes {
	w := &writes{}
	for missing := Buckets; missing > 0; {
		uid := uuid.NewUUID()
		if b := BucketOf(uid); w.uids[b] == "" {
			w.uids[b], missing = uid, missing-1
		}
	}
	return w
}

// write is a write loop of replica n: to random buckets, each admitted write
// held for up to 300 ms, as a slow request in flight is (longer than a
// rebalancing round, so that a bucket handed on before its writes end would
// show). A write that starts while another replica has one in flight to the
// same bucket is an overlap.
func (w *writes) write(ctx context.Context, r *Ring, n int) {
	for ctx.Err() == nil {
		b := Bucket(rand.IntN(Buckets))
		done, ok := r.Begin(w.uids[b])
		if !ok {
			continue
		}
		w.inflight[b][n].Add(1)
		for other := range maxReplicas {
			if other != n && w.inflight[b][other].Load() > 0 {
				w.overlaps.Add(1)
			}
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		w.inflight[b][n].Add(-1)
		done()
	}
}

func startReplica(t *testing.T, cs kubernetes.Interface, w *writes, n int) *replica {
	t.Helper()
	ring, err := NewRing(cs.CoordinationV1(), testOptions(fmt.Sprintf("replica-%d", n)))
	if err != nil {
		t.Fatal(err)
	}
	ring.OnChange(func(s Share) {
		w.changes.Add(1)
		if len(s.Held) > Buckets || len(s.Desired) > Buckets {
			t.Errorf("OnChange(%+v): more buckets than there are", s)
		}
	})
	loopCtx, stopLoop := context.WithCancel(t.Context())
	writeCtx, stopWrites := context.WithCancel(t.Context())
	rep := &replica{ring: ring, stopLoop: stopLoop, stopWrites: stopWrites, graceful: make(chan struct{})}
	go func() { ring.loop(loopCtx); close(rep.graceful) }()
	for range 16 {
		go w.write(writeCtx, ring, n)
	}
	t.Cleanup(func() { stopWrites(); stopLoop() })
	return rep
}

// stopGracefully ends rep as Run does on a clean stop: renewals end, then stop hands every bucket on.
func (rep *replica) stopGracefully(t *testing.T) {
	rep.stopLoop()
	<-rep.graceful
	if err := rep.ring.stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	rep.stopWrites()
}

// waitBalanced waits until the replicas hold every bucket between them, each
// exactly the buckets rendezvous hashing gives it, and returns how long it took.
func waitBalanced(t *testing.T, replicas ...*replica) time.Duration {
	t.Helper()
	start := time.Now()
	var ids []string
	for _, r := range replicas {
		ids = append(ids, r.ring.o.Identity)
	}
	owners := Assign(ids)
	for deadline := start.Add(testkit.Timeout); ; time.Sleep(20 * time.Millisecond) {
		balanced := true
		for _, r := range replicas {
			mine := Owned(owners, r.ring.o.Identity)
			balanced = balanced && slices.Equal(r.ring.Held(), mine) && slices.Equal(r.ring.Desired(), mine)
		}
		if balanced {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			for _, r := range replicas {
				t.Logf("%s holds %v and desires %v, should hold %v", r.ring.o.Identity, r.ring.Held(), r.ring.Desired(), Owned(owners, r.ring.o.Identity))
			}
			t.Fatalf("not balanced over %v after %s", ids, testkit.Timeout)
		}
	}
}

// Replicas joining (1→2→3), one leaving cleanly and one killed: every bucket
// ends with exactly its desired owner, and no bucket ever has writes in
// flight from two replicas at once.
func TestRingHandsBucketsOverWithoutTwoWriters(t *testing.T) {
	controlplane.SkipIfShort(t)
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	w := newWrites()
	a := startReplica(t, cs, w, 0)
	t.Logf("one replica holds all %d buckets after %s", Buckets, waitBalanced(t, a).Round(time.Millisecond))
	b := startReplica(t, cs, w, 1)
	t.Logf("1→2: balanced after %s", waitBalanced(t, a, b).Round(time.Millisecond))
	c := startReplica(t, cs, w, 2)
	t.Logf("2→3: balanced after %s", waitBalanced(t, a, b, c).Round(time.Millisecond))

	b.stopGracefully(t)
	// A clean stop releases everything: nobody waits for b's Lease to run
	// out. Checked on the Leases, not on the time the others took.
	if named := leasesNaming(t, cs, b.ring.o.Identity); len(named) > 0 {
		t.Errorf("after b's clean stop, Leases still name it: %v; the others wait for them to expire (lease duration %s), as if it had died",
			named, testOptions("").LeaseDuration)
	}
	took := waitBalanced(t, a, c)
	t.Logf("3→2, b stopped cleanly: balanced after %s", took.Round(time.Millisecond))

	c.stopLoop() // killed: nothing released, its Lease must expire
	took = waitBalanced(t, a)
	t.Logf("2→1, c killed: a holds everything after %s (lease duration %s)", took.Round(time.Millisecond), testOptions("").LeaseDuration)
	if took < testOptions("").RenewDeadline {
		t.Errorf("a took the killed replica's buckets after %s, before its renew deadline: both may have written", took)
	}
	if w.changes.Load() < 5 {
		t.Errorf("OnChange was called %d times over five changes of membership", w.changes.Load())
	}
	if n := w.overlaps.Load(); n > 0 {
		t.Errorf("%d writes overlapped another replica's write to the same bucket", n)
	}
}

// leasesNaming are the ring's Leases that name identity: its member Lease,
// and the bucket Leases it holds.
func leasesNaming(t *testing.T, cs kubernetes.Interface, identity string) []string {
	t.Helper()
	o := testOptions(identity)
	list, err := cs.CoordinationV1().Leases(o.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: RingLabel + "=" + o.Ring})
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, l := range list.Items {
		if l.Name == o.Ring+"-member-"+identity || ptr.Deref(l.Spec.HolderIdentity, "") == identity {
			named = append(named, l.Name)
		}
	}
	return named
}

func TestOptionsAreValidated(t *testing.T) {
	tests := map[string]struct {
		change func(*Options)
		want   string
	}{
		"a missing identity":                     {func(o *Options) { o.Identity = "" }, "identity are required"},
		"a renew deadline past the lease":        {func(o *Options) { o.RenewDeadline = o.LeaseDuration }, "renew deadline"},
		"a retry period past the renew deadline": {func(o *Options) { o.RetryPeriod = o.RenewDeadline }, "retry period"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := testOptions("x")
			tc.change(&o)
			if _, err := NewRing(nil, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewRing(%+v) = %v, want an error about %q", o, err, tc.want)
			}
		})
	}
}
