package sharding

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// faultyLeases is a replica's view of the Lease API with the faults a test
// sets: a list answered late (the server's answer held in the network), Lease
// writes refused (a failing webhook, etcd out of space, 5xx), Lease writes
// held before they reach the server.
type faultyLeases struct {
	coordinationv1client.LeasesGetter

	mu       sync.Mutex
	lateList time.Duration // the next list's answer arrives this much late
	// listHeldUntil: the next list's answer arrives once it is closed.
	listHeldUntil <-chan struct{}
	failWrites    bool          // every write of a Lease is refused
	failBuckets   bool          // writes of bucket Leases are refused
	holdWrites    time.Duration // the next write is held this long before it is sent
	refusedSoFar  int
	lateAnswers   int // late lists answered so far
}

func (f *faultyLeases) Leases(ns string) coordinationv1client.LeaseInterface {
	return faultyLeaseClient{LeaseInterface: f.LeasesGetter.Leases(ns), f: f}
}

func (f *faultyLeases) set(change func(*faultyLeases)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// beforeWrite holds or refuses a write of the Lease named name.
func (f *faultyLeases) beforeWrite(name string) error {
	f.mu.Lock()
	hold, refuse := f.holdWrites, f.failWrites || (f.failBuckets && isBucketLease(name))
	f.holdWrites = 0
	if refuse {
		f.refusedSoFar++
	}
	f.mu.Unlock()
	if refuse {
		return apierrors.NewInternalError(fmt.Errorf("lease writes refused (injected by the test)"))
	}
	time.Sleep(hold)
	return nil
}

func isBucketLease(name string) bool { return strings.Contains(name, "-bucket-") }

type faultyLeaseClient struct {
	coordinationv1client.LeaseInterface
	f *faultyLeases
}

func (c faultyLeaseClient) List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	list, err := c.LeaseInterface.List(ctx, opts)
	c.f.mu.Lock()
	late, held := c.f.lateList, c.f.listHeldUntil
	c.f.lateList, c.f.listHeldUntil = 0, nil
	c.f.mu.Unlock()
	time.Sleep(late)
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
		}
		c.f.set(func(f *faultyLeases) { f.lateAnswers++ })
	}
	return list, err
}

// count reads one of f's counters.
func (f *faultyLeases) count(counter func(*faultyLeases) int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return counter(f)
}

func (c faultyLeaseClient) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := c.f.beforeWrite(lease.Name); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Update(ctx, lease, opts)
}

func (c faultyLeaseClient) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := c.f.beforeWrite(lease.Name); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Create(ctx, lease, opts)
}

// span is a write request of one replica in flight to one bucket: from when
// it was sent (its claim checked, as authority.Wrap does) until it ended or its
// claim did (its deadline), whichever came first.
type span struct {
	replica  string
	from, to time.Time
}

// sends records, per bucket, the spans of every replica's writes.
type sends struct {
	mu    sync.Mutex
	spans [Buckets][]span
	uids  [Buckets]types.UID
}

func newSends() *sends {
	s := &sends{}
	s.uids = newWrites().uids
	return s
}

// write is one writer of ring r: admit a write to a random bucket (Begin),
// wait as the rate limiter may, check the claim again and send (Until),
// hold the request up to 50 ms, end it.
func (s *sends) write(ctx context.Context, r *Ring) {
	for ctx.Err() == nil {
		b := Bucket(rand.IntN(Buckets))
		done, ok := r.Begin(s.uids[b])
		if !ok {
			time.Sleep(time.Millisecond)
			continue
		}
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond) // the rate limiter
		if until, ok := r.Until(s.uids[b]); ok && time.Now().Before(until) {
			from := time.Now()
			time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
			to := time.Now()
			if until.Before(to) {
				to = until
			}
			s.mu.Lock()
			s.spans[b] = append(s.spans[b], span{replica: r.o.Identity, from: from, to: to})
			s.mu.Unlock()
		}
		done()
	}
}

// overlaps are the pairs of spans of two replicas on one bucket that overlap in time.
func (s *sends) overlaps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for b, spans := range s.spans {
		spans = slices.Clone(spans)
		sort.Slice(spans, func(i, j int) bool { return spans[i].from.Before(spans[j].from) })
		var open []span // spans still in flight at the current start
		for _, sp := range spans {
			open = slices.DeleteFunc(open, func(o span) bool { return !o.to.After(sp.from) })
			for _, o := range open {
				if o.replica != sp.replica {
					out = append(out, fmt.Sprintf("bucket %s: %s sent a write at %s while %s had one in flight until %s",
						Bucket(b), sp.replica, sp.from.Format("15:04:05.000"), o.replica, o.to.Format("15:04:05.000")))
				}
			}
			open = append(open, sp)
		}
	}
	return out
}

// member is a Ring run by a test through its own faulty Lease API.
type member struct {
	ring   *Ring
	leases *faultyLeases
	kill   context.CancelFunc
	ended  chan struct{}
}

// startMember runs a ring named ring as identity, with 8 writers recorded in s.
func startMember(t *testing.T, cs kubernetes.Interface, s *sends, ring, identity string) *member {
	t.Helper()
	o := testOptions(identity)
	o.Ring = ring
	leases := &faultyLeases{LeasesGetter: cs.CoordinationV1()}
	r, err := NewRing(leases, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, kill := context.WithCancel(t.Context())
	m := &member{ring: r, leases: leases, kill: kill, ended: make(chan struct{})}
	go func() { r.loop(ctx); close(m.ended) }()
	for range 8 {
		go s.write(ctx, r)
	}
	t.Cleanup(kill)
	return m
}

// stopCleanly ends m as Run does on SIGTERM.
func (m *member) stopCleanly(t *testing.T) {
	t.Helper()
	m.kill()
	<-m.ended
	if err := m.ring.stop(t.Context()); err != nil {
		t.Logf("%s: clean stop: %v", m.ring.o.Identity, err)
	}
}

// writableBy is how many of members may write each bucket now.
func writableBy(members []*member, uids [Buckets]types.UID) [Buckets]int {
	var n [Buckets]int
	for b := range Bucket(Buckets) {
		for _, m := range members {
			if _, ok := m.ring.Until(uids[b]); ok {
				n[b]++
			}
		}
	}
	return n
}

// waitEveryBucketWritableByOne waits until each bucket is writable by exactly one of members.
func waitEveryBucketWritableByOne(t *testing.T, members []*member, uids [Buckets]types.UID, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		n := writableBy(members, uids)
		var wrong []string
		for b, k := range n {
			if k != 1 {
				wrong = append(wrong, fmt.Sprintf("%s by %d", Bucket(b), k))
			}
		}
		if len(wrong) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > within {
			for _, m := range members {
				t.Logf("%s holds %v, desires %v, unwritable %v", m.ring.o.Identity, m.ring.Held(), m.ring.Desired(), m.ring.Unwritable())
			}
			t.Fatalf("after %s, buckets not writable by exactly one replica: %v", within, wrong)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
