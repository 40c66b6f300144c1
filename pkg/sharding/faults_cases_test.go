package sharding

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	controlplane.SkipIfShort(t)
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// A replica whose list of the ring's Leases is answered later than the lease
// duration: meanwhile the other replica counted it dead and took its buckets.
// Its renewal then succeeds (nobody touched its member Lease), yet the
// buckets the late list says it holds are no longer its own: it must not
// write them until it has confirmed them with a write of their Leases.
func TestALateListDoesNotLetAReplicaWriteBucketsTakenMeanwhile(t *testing.T) {
	cs := clientset(t)
	s := newSends()
	a := startMember(t, cs, s, "late-list", "a")
	b := startMember(t, cs, s, "late-list", "b")
	waitEveryBucketWritableByOne(t, []*member{a, b}, s.uids, testkit.Timeout)
	// a's next list is answered only once b has taken every bucket (a, not
	// renewing while it waits for the answer, looks dead to b after the
	// lease duration): the answer says a holds buckets it no longer does.
	tookAll := make(chan struct{})
	var once sync.Once
	b.ring.OnChange(func(share Share) {
		if len(share.Held) == Buckets {
			once.Do(func() { close(tookAll) })
		}
	})
	a.leases.set(func(f *faultyLeases) { f.listHeldUntil = tookAll })
	testkit.WaitFor(t, "b to take a's buckets, then a's late answer", testkit.Timeout, func() bool {
		return a.leases.count(func(f *faultyLeases) int { return f.lateAnswers }) > 0
	})
	took := waitEveryBucketWritableByOne(t, []*member{a, b}, s.uids, testkit.Timeout)
	t.Logf("every bucket writable by exactly one replica again %s after the late answer", took.Round(time.Millisecond))
	for _, o := range s.overlaps() {
		t.Error(o)
	}
}

// A replica hands buckets on to a newcomer, but its writes of bucket Leases
// are refused for longer than the renew deadline, so the release fails; the
// newcomer leaves again and the buckets are assigned back to it. They must
// become writable again (the hand-over abandoned), be reported unwritable
// while they are not, and never be written by two.
func TestAHandOverWhoseReleaseFailsIsUndone(t *testing.T) {
	cs := clientset(t)
	s := newSends()
	a := startMember(t, cs, s, "failed-release", "a")
	waitEveryBucketWritableByOne(t, []*member{a}, s.uids, testkit.Timeout)
	a.leases.set(func(f *faultyLeases) { f.failBuckets = true })
	b := startMember(t, cs, s, "failed-release", "b")
	// Only a hand-over writes a bucket Lease a holds: a refused write is a's
	// release, refused.
	testkit.WaitFor(t, "a to start handing on, and fail to release", testkit.Timeout, func() bool {
		return a.leases.count(func(f *faultyLeases) int { return f.refusedSoFar }) > 0
	})
	b.stopCleanly(t)
	// Reported once a bucket it is given has not been writable for twice
	// the lease duration (Ring.Unwritable), while the refusals go on.
	var unwritable []Bucket
	testkit.WaitFor(t, "a to report the buckets it cannot confirm (handed back to itself) as unwritable", testkit.Timeout, func() bool {
		unwritable = a.ring.Unwritable()
		return len(unwritable) > 0
	})
	a.leases.set(func(f *faultyLeases) { f.failBuckets = false })
	took := waitEveryBucketWritableByOne(t, []*member{a}, s.uids, testkit.Timeout)
	t.Logf("%d buckets reported unwritable during the outage; all writable by a %s after it ended", len(unwritable), took.Round(time.Millisecond))
	if got := a.ring.Unwritable(); len(got) != 0 {
		t.Errorf("buckets %v still reported unwritable after recovery", got)
	}
	for _, o := range s.overlaps() {
		t.Error(o)
	}
}

// Random sequences of late lists, refused and held Lease writes, replicas
// killed, stopped and started, over a shared clock: no two replicas ever
// have a write to one bucket in flight at once (a write is in flight from
// the moment its claim is checked as it is sent until it ends or the claim
// does), and once the faults end every bucket is writable by exactly one.
func TestRingUnderRandomFaults(t *testing.T) {
	cs := clientset(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d", seed)
	s := newSends()
	next := 0
	var alive []*member
	start := func() {
		alive = append(alive, startMember(t, cs, s, "random", fmt.Sprintf("r%d", next)))
		next++
	}
	start()
	start()
	lease := testOptions("").LeaseDuration
	for deadline := time.Now().Add(25 * time.Second); time.Now().Before(deadline); time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond) {
		m := alive[rng.IntN(len(alive))]
		switch action := rng.IntN(7); {
		case action == 0:
			m.leases.set(func(f *faultyLeases) { f.lateList = lease + time.Duration(rng.IntN(2000))*time.Millisecond })
		case action == 1:
			m.leases.set(func(f *faultyLeases) { f.failWrites = !f.failWrites })
		case action == 2:
			m.leases.set(func(f *faultyLeases) { f.failBuckets = !f.failBuckets })
		case action == 3:
			m.leases.set(func(f *faultyLeases) {
				f.holdWrites = time.Duration(rng.IntN(int(lease/time.Millisecond))) * time.Millisecond
			})
		case action == 4 && len(alive) > 1:
			m.kill()
			alive = remove(alive, m)
		case action == 5 && len(alive) > 1:
			m.stopCleanly(t)
			alive = remove(alive, m)
		case len(alive) < 3:
			start()
		}
	}
	for _, m := range alive {
		m.leases.set(func(f *faultyLeases) { f.lateList, f.failWrites, f.failBuckets, f.holdWrites = 0, false, false, 0 })
	}
	took := waitEveryBucketWritableByOne(t, alive, s.uids, 45*time.Second)
	t.Logf("%d replicas started; once the faults ended, every bucket was writable by exactly one of the %d alive after %s", next, len(alive), took.Round(time.Millisecond))
	for _, o := range s.overlaps() {
		t.Error(o)
	}
}

func remove(members []*member, m *member) []*member {
	out := members[:0:0]
	for _, o := range members {
		if o != m {
			out = append(out, o)
		}
	}
	return out
}
