package rulecontroller_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// movingHolder stands for one replica's Ring: it holds the buckets [from,
// to), and tells the listeners the controllers registered when they change.
type movingHolder struct {
	mu           sync.Mutex
	from, to     sharding.Bucket
	gained, lost []func([]sharding.Bucket)
}

func newMovingHolder(from, to sharding.Bucket) *movingHolder {
	return &movingHolder{from: from, to: to}
}

func (h *movingHolder) Holds(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := sharding.BucketOf(uid)
	return b >= h.from && b < h.to
}

func (h *movingHolder) onGained(f func([]sharding.Bucket)) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gained = append(h.gained, f)
	return func() {}
}

func (h *movingHolder) onLost(f func([]sharding.Bucket)) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lost = append(h.lost, f)
	return func() {}
}

// moveTo makes the holder hold [from, to) and tells the listeners, as the
// Ring does after a round: the buckets are held (or not) before they are told of.
func (h *movingHolder) moveTo(from, to sharding.Bucket) {
	h.mu.Lock()
	var came, went []sharding.Bucket
	for b := range sharding.Bucket(sharding.Buckets) {
		was, is := b >= h.from && b < h.to, b >= from && b < to
		switch {
		case is && !was:
			came = append(came, b)
		case was && !is:
			went = append(went, b)
		}
	}
	h.from, h.to = from, to
	gained, lost := h.gained, h.lost
	h.mu.Unlock()
	for _, f := range lost {
		if len(went) > 0 {
			f(went)
		}
	}
	for _, f := range gained {
		if len(came) > 0 {
			f(came)
		}
	}
}

// awaitListeners waits until the controllers listen for the buckets that
// come and go (they register once started).
func (h *movingHolder) awaitListeners(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, "the controllers to listen for the buckets held", testkit.Timeout, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.gained) > 0 && len(h.lost) > 0
	})
}

func (h *movingHolder) options() tuning {
	t := tuned(func(s *settings.Settings) { s.MaxConcurrentReconciles, s.Mode = 2, authority.Sharded })
	t.Share = h
	return t
}

// The buckets moving here, as the Ring tells them; the Namespaces are cached
// whole, so no bucket comes to the cache: nothing to tell.
func (h *movingHolder) OnGained(func([]sharding.Bucket)) func() { return func() {} }

func (h *movingHolder) OnHeldGained(f func([]sharding.Bucket)) func() { return h.onGained(f) }

func (h *movingHolder) OnHeldLost(f func([]sharding.Bucket)) func() { return h.onLost(f) }

// Two replicas, each holding half of the buckets, audit Namespaces (which
// both cache whole) once between them: the violations gauge (one registry
// for both here, so their sum) is the number of violating Namespaces, each
// counted once in the aggregate Events (a Namespace's are told in itself). When buckets move from one to the other, the one losing
// them stops counting their Namespaces and the one gaining them starts,
// with no new event from the API server: the gauge stays exact, and a moved
// Namespace's violation is told at most once more, by its new holder.
func TestAuditsFollowTheBucketsHeld(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const violators = 12
	uids := map[types.UID]string{}
	for i := range violators {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("audit-held-%02d", i), Labels: map[string]string{"audit-held": "yes"}}}
		if err := c.Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
		testkit.DeleteAtCleanup(t, c, ns)
		uids[ns.UID] = ns.Name
	}
	const configYAML = "watches:\n- kind: Namespace\n  labelSelector: audit-held=yes\nrules:\n- {name: audit-held, kinds: [Namespace], requireLabels: [owner]}\n"
	// The first replica holds [0, split), the second the rest; then the
	// second gives [split, moved) to the first. Both ranges have Namespaces.
	split, moved := splitPoints(t, uids)
	first, second := newMovingHolder(0, split), newMovingHolder(split, sharding.Buckets)
	startInstance(t, configYAML, first.options())
	startInstance(t, configYAML, second.options())
	violations := func() float64 {
		return testkit.Metric(t, "metawatch_rule_violations", map[string]string{"rule": "audit-held"})
	}
	events := func(name string) int {
		return testkit.Occurrences(testkit.AggregateEvents(t, c, name, rulecontroller.ReasonMissingRequired, "audit-held"))
	}
	everyEvent := func() bool {
		for _, name := range uids {
			if events(name) == 0 {
				return false
			}
		}
		return true
	}
	testkit.WaitFor(t, fmt.Sprintf("%d violations between two replicas, each Namespace with an Event", violators), testkit.Timeout, func() bool {
		return violations() == violators && everyEvent()
	})
	for _, name := range uids {
		if n := events(name); n != 1 {
			t.Errorf("Namespace %s is counted %d times in %s Events from two replicas, want 1", name, n, rulecontroller.ReasonMissingRequired)
		}
	}

	first.awaitListeners(t)
	second.awaitListeners(t)
	second.moveTo(moved, sharding.Buckets)
	testkit.WaitFor(t, "the gauge to drop the Namespaces of the buckets given up", testkit.Timeout, func() bool {
		return violations() == float64(violators-inBuckets(uids, split, moved))
	})
	first.moveTo(0, moved)
	testkit.WaitFor(t, fmt.Sprintf("%d violations once the other replica holds the buckets", violators), testkit.Timeout, func() bool {
		return violations() == violators
	})
	for uid, name := range uids {
		b := sharding.BucketOf(uid)
		if n := events(name); n < 1 || n > 2 || ((b < split || b >= moved) && n != 1) {
			t.Errorf("Namespace %s (bucket %s, moved: %v) is counted %d times in %s Events, want 1, or 2 if it moved", name, b, b >= split && b < moved, n, rulecontroller.ReasonMissingRequired)
		}
	}
}

// splitPoints are two bucket bounds with objects of uids in [0, split),
// [split, moved) and [moved, Buckets).
func splitPoints(t *testing.T, uids map[types.UID]string) (split, moved sharding.Bucket) {
	t.Helper()
	var buckets []sharding.Bucket
	for uid := range uids {
		if b := sharding.BucketOf(uid); !slices.Contains(buckets, b) {
			buckets = append(buckets, b)
		}
	}
	slices.Sort(buckets)
	if len(buckets) < 3 {
		t.Fatalf("%d objects fell in %d buckets, want at least 3: make more", len(uids), len(buckets))
	}
	return buckets[len(buckets)/3], buckets[2*len(buckets)/3]
}

// inBuckets counts the uids of the buckets [from, to).
func inBuckets(uids map[types.UID]string, from, to sharding.Bucket) int {
	n := 0
	for uid := range uids {
		if b := sharding.BucketOf(uid); b >= from && b < to {
			n++
		}
	}
	return n
}
