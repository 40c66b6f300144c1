package reload

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Sharding runs the Reloader sharded: every replica runs generations, not only
// a leader. Each generation caches the replica's desired buckets and writes
// through the Ring's gate, so it writes only the objects of the buckets it
// holds. When the desired buckets change (a replica came or went), the
// running generation's caches follow in place (sharding.Coverage): the
// buckets that came are listed alone, the objects of those that went are
// dropped, and nothing else is listed again or rebuilt.
type Sharding struct {
	Ring *sharding.Ring
	// ServerSide: the API server filters by shard (sharding.ServerFilters);
	// else the client drops what is not the replica's.
	ServerSide bool
	// Recorder, if set, records a Warning Event on Regarding (the replica's
	// member Lease) when buckets assigned to it stay unwritable.
	Recorder  events.EventRecorder
	Regarding runtime.Object

	cover *sharding.Coverage // the Ring's desired buckets, which the caches hold
	// desired are the buckets last desired, and gained is told of those
	// that come (the Ring's own goroutine only, through OnChange).
	desired []sharding.Bucket
	gained  listeners
	// held are the buckets last held; heldGained and heldLost are told of
	// those this replica comes to hold and stops holding (the Ring's own
	// goroutine only, through OnChange): the audits follow them.
	held                 []sharding.Bucket
	heldGained, heldLost listeners
	// reported is how many buckets were last reported unwritable (the
	// Ring's own goroutine only, through OnChange).
	reported int
}

// ReasonBucketsUnwritable is the reason of the Warning Event saying that
// buckets assigned to this replica have not been writable for longer than a
// hand-over takes: their objects are written by no replica.
const ReasonBucketsUnwritable = "BucketsUnwritable"

// share says how many buckets this replica holds and desires.
func (s *Sharding) share() string {
	return fmt.Sprintf("%d of %d buckets held, %d desired", len(s.Ring.Held()), sharding.Buckets, len(s.Ring.Desired()))
}

// watch makes the caches and the metrics follow the Ring: the buckets
// desired, held and unwritable.
func (s *Sharding) watch() {
	s.cover = sharding.NewCoverage(s.Ring.Desired())
	s.desired = s.Ring.Desired()
	s.Ring.OnChange(func(share sharding.Share) {
		s.cover.Set(share.Desired)
		if came := without(share.Desired, s.desired); len(came) > 0 {
			s.gained.tell(came)
		}
		s.desired = share.Desired
		s.noteHeld(share.Held)
		telemetry.BucketsOwned.Set(float64(len(share.Held)))
		s.noteUnwritable(share.Unwritable)
	})
}

// noteHeld tells the audits of the buckets this replica came to hold and
// stopped holding since the last change. The Ring tells at the end of the
// round that released a bucket: its next holder may count an object of it
// before this replica has dropped it, for the rest of that round.
func (s *Sharding) noteHeld(held []sharding.Bucket) {
	if went := without(s.held, held); len(went) > 0 {
		s.heldLost.tell(went)
	}
	if came := without(held, s.held); len(came) > 0 {
		s.heldGained.tell(came)
	}
	s.held = held
}

// awaitAssignment waits until the Ring has assigned this replica its
// buckets, so that the first generation's caches list them from the start
// (and are synced only once they hold them); false if ctx ended first.
func (s *Sharding) awaitAssignment(ctx context.Context, waiting func(string)) bool {
	waiting("waiting for this replica's share of the buckets (the sharding ring's first round)")
	select {
	case <-s.Ring.Assigned():
		s.cover.Set(s.Ring.Desired())
		return true
	case <-ctx.Done():
		return false
	}
}

// noteUnwritable publishes the unwritable buckets, with a Warning Event when
// there are more than before.
func (s *Sharding) noteUnwritable(buckets []sharding.Bucket) {
	telemetry.BucketsUnwritable.Set(float64(len(buckets)))
	more := len(buckets) > s.reported
	s.reported = len(buckets)
	if more && s.Recorder != nil && s.Regarding != nil {
		s.Recorder.Eventf(s.Regarding, nil, corev1.EventTypeWarning, ReasonBucketsUnwritable, "Shard", "%s", s.unwritableMessage(buckets))
	}
}

func (s *Sharding) unwritableMessage(buckets []sharding.Bucket) string {
	names := make([]string, len(buckets))
	for i, b := range buckets {
		names[i] = b.String()
	}
	return fmt.Sprintf("%d buckets assigned to this replica have not been writable for over twice the lease duration, so no replica writes their objects: %s (its Lease writes fail, or a hand-over is stuck; see the log of the sharding ring)",
		len(buckets), strings.Join(names, ", "))
}

// cacheFilter restricts a generation's cache to the buckets desired.
func (s *Sharding) cacheFilter() *metacache.ShardFilter {
	return &metacache.ShardFilter{Cover: s.cover, ServerSide: s.ServerSide}
}

// Holds reports whether this replica holds the bucket of the object with
// uid, and so audits it (rulecontroller.Share).
func (s *Sharding) Holds(uid types.UID) bool { return s.Ring.Holds(uid) }

// OnGained calls f with the buckets that come to this replica, as they come,
// until remove is called. The kinds every replica caches whole (cluster-scoped
// kinds, owner chains) are not listed again when their buckets come, as the
// kinds cached by share are: their controllers queue the objects of the
// buckets that came, whose writes another replica may have left undone.
func (s *Sharding) OnGained(f func([]sharding.Bucket)) (remove func()) {
	return s.gained.add(f)
}

// OnHeldGained calls f with the buckets this replica comes to hold, as it
// comes to hold them, until remove is called: their objects are audited
// here from then on (rulecontroller.Holder), and the controllers of audited
// kinds queue them.
func (s *Sharding) OnHeldGained(f func([]sharding.Bucket)) (remove func()) {
	return s.heldGained.add(f)
}

// OnHeldLost calls f with the buckets this replica stops holding, as it
// stops, until remove is called: the audits forget their objects, which
// their next holder counts.
func (s *Sharding) OnHeldLost(f func([]sharding.Bucket)) (remove func()) {
	return s.heldLost.add(f)
}

// listeners are functions told of buckets, added and removed at any time.
type listeners struct {
	mu   sync.Mutex
	next int
	fns  map[int]func([]sharding.Bucket)
}

func (l *listeners) add(f func([]sharding.Bucket)) (remove func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fns == nil {
		l.fns = map[int]func([]sharding.Bucket){}
	}
	id := l.next
	l.next++
	l.fns[id] = f
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.fns, id)
	}
}

func (l *listeners) tell(buckets []sharding.Bucket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.fns {
		f(buckets)
	}
}

// without is a's buckets that are not in b.
func without(a, b []sharding.Bucket) []sharding.Bucket {
	var out []sharding.Bucket
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
