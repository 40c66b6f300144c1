package sharding

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// fakeClock is a shared, manually advanced clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(d time.Duration, base time.Time) {
	c.mu.Lock()
	c.t = base.Add(d)
	c.mu.Unlock()
}

// leaseStore is an in-memory Lease API with resourceVersion preconditions.
type leaseStore struct {
	mu     sync.Mutex
	rv     int
	leases map[string]*coordinationv1.Lease
	// afterList, if set, runs once after a list's snapshot is taken and
	// before it is returned to the caller (a late answer).
	afterList map[string]func()
}

var leaseGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

type storeClient struct {
	coordinationv1client.LeaseInterface
	s   *leaseStore
	who string
}

type storeGetter struct {
	s   *leaseStore
	who string
}

func (g storeGetter) Leases(string) coordinationv1client.LeaseInterface {
	return storeClient{s: g.s, who: g.who}
}

func (c storeClient) List(_ context.Context, _ metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	c.s.mu.Lock()
	list := &coordinationv1.LeaseList{}
	for _, l := range c.s.leases {
		list.Items = append(list.Items, *l.DeepCopy())
	}
	hook := c.s.afterList[c.who]
	delete(c.s.afterList, c.who)
	c.s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return list, nil
}

func (c storeClient) Create(_ context.Context, l *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if _, ok := c.s.leases[l.Name]; ok {
		return nil, apierrors.NewAlreadyExists(leaseGR, l.Name)
	}
	c.s.rv++
	l = l.DeepCopy()
	l.ResourceVersion = itoa(c.s.rv)
	c.s.leases[l.Name] = l
	return l.DeepCopy(), nil
}

func (c storeClient) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	cur, ok := c.s.leases[l.Name]
	if !ok {
		return nil, apierrors.NewNotFound(leaseGR, l.Name)
	}
	if cur.ResourceVersion != l.ResourceVersion {
		return nil, apierrors.NewConflict(leaseGR, l.Name, nil)
	}
	c.s.rv++
	l = l.DeepCopy()
	l.ResourceVersion = itoa(c.s.rv)
	c.s.leases[l.Name] = l
	return l.DeepCopy(), nil
}

func (c storeClient) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	delete(c.s.leases, name)
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }

// A late list answer on the taker: b's snapshot is taken just before a's
// renewal lands, and arrives more than the lease duration after b first saw
// a's previous renewal. a's renewal succeeded within the lease duration, so a
// rightly keeps its buckets; b must judge a by when its list was sent, not
// by when the answer came, or both write a's buckets at once. Driven on a
// shared fake clock over an in-memory Lease API that enforces
// resourceVersion preconditions: the real API server cannot be made to
// answer at a chosen moment of a test's clock.
func TestALateListOnTheTakerDoesNotMakeTwoWriters(t *testing.T) {
	base := time.Unix(1_000_000, 0)
	clock := &fakeClock{t: base}
	s := &leaseStore{leases: map[string]*coordinationv1.Lease{}, afterList: map[string]func(){}}
	mk := func(id string) *Ring {
		o := testOptions(id) // LD 3s, RD 2s, RP 200ms
		r, err := NewRing(storeGetter{s: s, who: id}, o)
		if err != nil {
			t.Fatal(err)
		}
		r.now = clock.Now
		return r
	}
	a, b := mk("a"), mk("b")
	ctx := t.Context()
	at := func(d time.Duration) { clock.Set(d, base) }

	// Converge: a and b split the buckets.
	step := 0
	for ; step < 15; step++ {
		at(time.Duration(step) * 200 * time.Millisecond)
		a.round(ctx)
		at(time.Duration(step)*200*time.Millisecond + 100*time.Millisecond)
		b.round(ctx)
	}
	t.Logf("converged: a holds %d, b holds %d", len(a.Held()), len(b.Held()))
	// From now on (t=3.0s) a's last renewal is at 2.8s. a makes no round (its
	// member Lease writes are refused, or it is slow) until 5.75s: less than
	// the lease duration after its last renewal was sent. b keeps going.
	for d := 3100 * time.Millisecond; d < 5700*time.Millisecond; d += 200 * time.Millisecond {
		at(d)
		b.round(ctx)
	}
	// b lists at 5.7s; its answer is late: before it arrives, a renews at
	// 5.75s (2.95s after its previous renewal, < LD: its buckets stay
	// verified); b gets the answer at 6.0s.
	s.mu.Lock()
	s.afterList["b"] = func() {
		at(5750 * time.Millisecond)
		a.round(ctx)
		at(6000 * time.Millisecond)
	}
	s.mu.Unlock()
	at(5700 * time.Millisecond)
	b.round(ctx)

	var uids [Buckets]types.UID
	for missing := Buckets; missing > 0; {
		uid := uuid.NewUUID()
		if bk := BucketOf(uid); uids[bk] == "" {
			uids[bk], missing = uid, missing-1
		}
	}
	both := 0
	for bk := range Bucket(Buckets) {
		_, okA := a.Until(uids[bk])
		_, okB := b.Until(uids[bk])
		if okA && okB {
			both++
		}
	}
	t.Logf("at 6.0s: a holds %d buckets, b holds %d", len(a.Held()), len(b.Held()))
	if both > 0 {
		t.Errorf("%d buckets writable by both a and b at once", both)
	}
}
