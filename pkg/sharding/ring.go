package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// Options are a Ring's settings.
type Options struct {
	// Namespace holds the member and bucket Leases (the release's).
	Namespace string
	// Ring names the set of replicas sharing the buckets: Leases are named
	// and labelled with it, so two installations in one namespace never mix.
	Ring string
	// Identity is this replica's, unique among the ring's live members (the pod's name).
	Identity string
	// LeaseDuration is how long a member that stopped renewing is still
	// counted alive by the others; RenewDeadline (shorter) is how long this
	// replica keeps writing without a successful renewal; RetryPeriod is how
	// often it renews and rebalances.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

func (o Options) validate() error {
	var errs []error
	if o.Namespace == "" || o.Ring == "" || o.Identity == "" {
		errs = append(errs, fmt.Errorf("sharding: namespace, ring and identity are required (got %q, %q, %q)", o.Namespace, o.Ring, o.Identity))
	}
	if o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline {
		errs = append(errs, fmt.Errorf("sharding: want 0 < retry period (%s) < renew deadline (%s) < lease duration (%s)",
			o.RetryPeriod, o.RenewDeadline, o.LeaseDuration))
	}
	return errors.Join(errs...)
}

// Ring is one replica's share of the buckets and the gate its writes pass.
//
// A replica writes an object only while it holds the Lease of the object's
// bucket and its own member Lease was renewed less than RenewDeadline ago.
// It gives a bucket up only after that bucket's writes in flight have ended,
// and takes one held by another replica only after that replica's member
// Lease has not changed for LeaseDuration, as seen on its own clock (so only
// the clocks' rates matter, not their settings, as in client-go's leader
// election). Since RenewDeadline < LeaseDuration, the old holder has stopped
// writing before the new one starts.
type Ring struct {
	o      Options
	leases coordinationv1client.LeasesGetter
	now    func() time.Time

	mu       sync.Mutex
	renewed  time.Time              // when the last successful renewal of this replica's member Lease was sent
	held     map[Bucket]*heldBucket // buckets whose Lease names this replica
	seen     map[string]observation // member identity → its Lease's last version and when it changed
	stopping bool
	desired  []Bucket             // what the last round's live members give this replica
	blocked  map[Bucket]time.Time // desired buckets this replica cannot write, since when
	onChange func(Share)
	notified Share // what onChange was last called with
	// assigned is closed once a round has read the members and assigned
	// this replica its desired buckets.
	assigned     chan struct{}
	assignedOnce sync.Once
}

// Share is what a replica holds of the buckets and what it should.
type Share struct {
	// Held are the buckets whose Lease names this replica; Desired those the
	// live members give it; Unwritable the desired ones it has not been able
	// to write for longer than a hand-over takes (see Ring.Unwritable).
	Held, Desired, Unwritable []Bucket
}

func (s Share) equal(o Share) bool {
	return slices.Equal(s.Held, o.Held) && slices.Equal(s.Desired, o.Desired) && slices.Equal(s.Unwritable, o.Unwritable)
}

// heldBucket is a bucket this replica holds: its Lease's version and the writes in flight.
type heldBucket struct {
	resourceVersion string
	// verified: this replica's own write of the bucket's Lease succeeded
	// (taking it, or confirming it), and its renewals have not lapsed for a
	// lease duration since. A bucket that is not verified is not written: it
	// was read from a list that may be stale (after a restart, after a
	// renewal that came late, after a hand-over that was abandoned), and
	// another replica may have taken it since.
	verified bool
	draining bool // no new writes: it is being given up
	inflight int
}

// observation is when a member's Lease was last seen to change (this replica's clock).
type observation struct {
	resourceVersion string
	at              time.Time
}

// NewRing returns a Ring that holds nothing until Run has renewed and balanced.
func NewRing(leases coordinationv1client.LeasesGetter, o Options) (*Ring, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	return &Ring{o: o, leases: leases, now: time.Now, held: map[Bucket]*heldBucket{}, seen: map[string]observation{}, blocked: map[Bucket]time.Time{},
		assigned: make(chan struct{})}, nil
}

// Assigned is closed once this replica knows its desired buckets (a round
// has read the ring's members): a cache built before would start empty and
// fill as they come, and say it is synced before it is.
func (r *Ring) Assigned() <-chan struct{} { return r.assigned }

// OnChange sets f to be called, from Run, with this replica's Share each
// time it changes. The cache should hold the desired buckets: they change
// only when members come or go, ahead of the handovers, so a new owner's
// cache is synced when its Lease comes.
func (r *Ring) OnChange(f func(Share)) {
	r.mu.Lock()
	r.onChange = f
	r.mu.Unlock()
}

// Begin admits a write to the object with uid if this replica may write it
// now; done must be called when the write has ended, whatever its outcome.
func (r *Ring) Begin(uid types.UID) (done func(), ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.writable(BucketOf(uid))
	if h == nil {
		return nil, false
	}
	h.inflight++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			h.inflight--
			r.mu.Unlock()
		})
	}, true
}

// Until is the end of this replica's claim on the object with uid: the
// renew deadline after its last successful membership renewal was sent, if
// it holds the object's bucket and may write it now (authority.Claim).
func (r *Ring) Until(uid types.UID) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.writable(BucketOf(uid)) == nil {
		return time.Time{}, false
	}
	return r.renewed.Add(r.o.RenewDeadline), true
}

// Member is this replica's identity in the ring (Options.Identity).
func (r *Ring) Member() string { return r.o.Identity }

// MemberUntil is the end of this replica's claim as a live member of the
// ring, whatever the bucket: what it writes of its own alone (its reports,
// named after it) needs no bucket, only that the others still count it alive.
func (r *Ring) MemberUntil() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping || !r.renewedRecently() {
		return time.Time{}, false
	}
	return r.renewed.Add(r.o.RenewDeadline), true
}

// writable is bucket b if this replica may write it now, else nil. r.mu must be held.
func (r *Ring) writable(b Bucket) *heldBucket {
	h := r.held[b]
	if h == nil || !h.verified || h.draining || r.stopping || !r.renewedRecently() {
		return nil
	}
	return h
}

// Unwritable are the buckets the live members give this replica that it has
// not been able to write for longer than twice the lease duration: a
// hand-over takes at most one (a dead holder's Lease expiring) and a few
// rounds. Such a bucket's objects are written by no replica.
func (r *Ring) Unwritable() []Bucket {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unwritableLocked()
}

func (r *Ring) unwritableLocked() []Bucket {
	var out []Bucket
	now := r.now()
	for _, b := range r.desired {
		if since, ok := r.blocked[b]; ok && now.Sub(since) > 2*r.o.LeaseDuration {
			out = append(out, b)
		}
	}
	return out
}

// trackBlocked notes since when each desired bucket has not been writable. r.mu must be held.
func (r *Ring) trackBlocked() {
	now := r.now()
	for b := range r.blocked {
		if !slices.Contains(r.desired, b) || r.writable(b) != nil {
			delete(r.blocked, b)
		}
	}
	for _, b := range r.desired {
		if _, ok := r.blocked[b]; !ok && r.writable(b) == nil {
			r.blocked[b] = now
		}
	}
}

// Pending reports whether the bucket of uid should be this replica's (it is
// desired) but is not held yet, or is held and not writable this moment:
// a write to it refused now will pass once the handover is done.
func (r *Ring) Pending(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := BucketOf(uid)
	return !r.stopping && slices.Contains(r.desired, b) && r.writable(b) == nil
}

// Holds reports whether this replica holds the bucket of uid: its Lease
// names this replica, as of the last round. It is what decides which replica
// audits an object (rulecontroller.Holder): unlike Begin, it does not change with
// time between rounds, so the audits change with Held, as OnChange tells.
func (r *Ring) Holds(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[BucketOf(uid)] != nil
}

// Held are the buckets this replica holds, in order.
func (r *Ring) Held() []Bucket {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.heldLocked()
}

func (r *Ring) heldLocked() []Bucket {
	out := make([]Bucket, 0, len(r.held))
	for b := range Bucket(Buckets) {
		if r.held[b] != nil {
			out = append(out, b)
		}
	}
	return out
}

// Desired are the buckets the live members, as of the last round, give
// this replica: what it holds once the handovers are done.
func (r *Ring) Desired() []Bucket {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.desired)
}

// renewedRecently reports whether this replica may still write on the
// strength of its last renewal. r.mu must be held.
func (r *Ring) renewedRecently() bool {
	return !r.renewed.IsZero() && r.now().Sub(r.renewed) < r.o.RenewDeadline
}

// Run renews this replica's member Lease and rebalances the buckets every
// RetryPeriod until ctx ends, then hands every bucket on (see Stop).
func (r *Ring) Run(ctx context.Context) error {
	r.loop(ctx)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.RenewDeadline)
	defer cancel()
	return r.stop(stopCtx)
}

// loop renews and rebalances every RetryPeriod until ctx ends.
func (r *Ring) loop(ctx context.Context) {
	ticker := time.NewTicker(r.o.RetryPeriod)
	defer ticker.Stop()
	for {
		r.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
