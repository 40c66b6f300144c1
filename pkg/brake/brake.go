// Package brake bounds mass removals: how many objects of a kind metawatch
// removes or releases keys on, per configuration, before an operator says
// that this is meant.
//
// One mistaken edit (a rule removed or narrowed, a Namespace relabelled, a
// guardrail flag narrowed, or the first pass of a replica whose view is
// wrong) would otherwise strip a key from every object of a kind within
// seconds, long before anyone reads an Event. The brake lets a bounded
// number of objects per kind through (a count, or a share of the kind's
// cached objects, whichever is larger) and holds the rest: their keys stay
// as they are, and metawatch says so, until the operator approves the
// configuration by its hash (the ConfigMap annotation AllowRemovals) or
// raises the bound. Sets and copies are never held: they add, and a
// mistaken add is undone by an edit, where a removal loses the value.
//
// A Brake lives as long as one generation (one configuration): a new
// configuration starts a new count, so the first pass after any change, or
// after a start, is bounded. Within a generation the count restarts every
// Window while nothing is held, so that a steady trickle of legitimate
// removals (objects that stop matching a rule one by one, over days) is
// never held; once the brake holds, it keeps holding until approved or
// until the configuration changes: restarting the count then would let the
// mistake through one bound per window.
package brake

import (
	"flag"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// AllowRemovals is the ConfigMap annotation that approves the removals of
// one configuration: its value is that configuration's hash (as the
// RemovalsHeld Event and /readyz/configuration say it). A later change has
// another hash, and is braked again.
const AllowRemovals = "metawatch.dev/allow-removals"

// Limits are the operator's bound (flags --removal-brake-objects,
// --removal-brake-share, --removal-brake-window).
type Limits struct {
	// Objects per kind that may lose keys per generation and window.
	Objects int
	// SharePercent of the kind's cached objects that may: the bound is the
	// larger of the two, so that a large kind is not held for a change
	// proportionate to its size.
	SharePercent float64
	// Window after which the count restarts, while nothing is held.
	Window time.Duration
}

// DefaultLimits are the flags' defaults.
func DefaultLimits() Limits {
	return Limits{Objects: 100, SharePercent: 1, Window: 10 * time.Minute}
}

// Disabled reports whether these limits brake nothing: no count and no share.
func (l Limits) Disabled() bool { return l.Objects <= 0 && l.SharePercent <= 0 }

// Bound is how many objects of a kind with cached objects may lose keys:
// max(Objects, ceil(SharePercent% of cached)).
func (l Limits) Bound(cached int) int {
	share := int(math.Ceil(l.SharePercent * float64(cached) / 100))
	return max(l.Objects, share)
}

// Validate says what is wrong with the limits, in the flags' words.
func (l Limits) Validate() error {
	switch {
	case l.Objects < 0:
		return fmt.Errorf("--removal-brake-objects is %d: expected 0 or more objects (0 with --removal-brake-share=0 turns the brake off)", l.Objects)
	case l.SharePercent < 0 || l.SharePercent > 100:
		return fmt.Errorf("--removal-brake-share is %g: expected a percentage from 0 to 100", l.SharePercent)
	case l.Window <= 0:
		return fmt.Errorf("--removal-brake-window is %s: expected a positive duration, e.g. 10m", l.Window)
	}
	return nil
}

// Brake is one generation's: the objects each kind lost keys on, those held.
type Brake struct {
	limits Limits
	hash   string
	now    func() time.Time
	// live: this generation's counts are metawatch_removals_held's (Publish).
	live atomic.Bool

	mu       sync.Mutex
	approved bool
	kinds    map[string]*kindCount
	// onHeld is told once per kind when the brake starts holding it.
	onHeld func(kind string)
	// onApproved is told, per kind, which objects were held when the
	// configuration was approved: they are queued to be written now.
	onApproved map[string]func([]types.NamespacedName)
}

// kindCount is one kind's count.
type kindCount struct {
	since   time.Time
	touched map[types.NamespacedName]bool // objects let through since since
	held    map[types.NamespacedName]bool
	told    bool // onHeld was called for this kind
}

// New returns the brake of the configuration whose hash is hash.
func New(limits Limits, hash string, now func() time.Time) *Brake {
	if now == nil {
		now = time.Now
	}
	return &Brake{limits: limits, hash: hash, now: now, kinds: map[string]*kindCount{}, onApproved: map[string]func([]types.NamespacedName){}}
}

// Hash is the hash of the configuration this brake is for.
func (b *Brake) Hash() string { return b.hash }

// OnHeld registers f, told once per kind when the brake starts holding it.
func (b *Brake) OnHeld(f func(kind string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onHeld = f
}

// OnApproved registers f, told of kind's held objects when they are let go.
func (b *Brake) OnApproved(kind string, f func([]types.NamespacedName)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onApproved[kind] = f
}

// Admit reports whether the object key of kind, of which cached objects are
// cached, may lose keys now. It counts the object if so, and holds it if not.
func (b *Brake) Admit(kind string, key types.NamespacedName, cached int) bool {
	if b == nil || b.limits.Disabled() {
		return true
	}
	b.mu.Lock()
	if b.approved {
		b.mu.Unlock()
		return true
	}
	k := b.kind(kind)
	if k.touched[key] {
		b.mu.Unlock()
		return true // counted already: a retry, or a second decision on it
	}
	if len(k.held) == 0 && b.now().Sub(k.since) >= b.limits.Window {
		k.since, k.touched = b.now(), map[types.NamespacedName]bool{}
	}
	if len(k.touched) < b.limits.Bound(cached) {
		k.touched[key] = true
		delete(k.held, key)
		b.mu.Unlock()
		return true
	}
	k.held[key] = true
	b.publishKind(kind, k)
	telemetry.RemovalsHeldTotal.WithLabelValues(kind).Inc()
	tell := !k.told
	k.told = true
	onHeld := b.onHeld
	b.mu.Unlock()
	if tell && onHeld != nil {
		onHeld(kind)
	}
	return false
}

// Forget drops key from kind's held objects: it needs no removal any more
// (the rule came back), or it is gone.
func (b *Brake) Forget(kind string, key types.NamespacedName) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := b.kinds[kind]; ok && k.held[key] {
		delete(k.held, key)
		b.publishKind(kind, k)
	}
}

func (b *Brake) kind(kind string) *kindCount {
	k, ok := b.kinds[kind]
	if !ok {
		k = &kindCount{since: b.now(), touched: map[types.NamespacedName]bool{}, held: map[types.NamespacedName]bool{}}
		b.kinds[kind] = k
	}
	return k
}

// Approve lets every removal of this configuration go on, if hash is its
// hash, and reports whether it did. The objects held so far are handed to
// the functions OnApproved registered, to be written now.
func (b *Brake) Approve(hash string) bool {
	if b == nil || hash != b.hash {
		return false
	}
	b.mu.Lock()
	if b.approved {
		b.mu.Unlock()
		return true
	}
	b.approved = true
	release := map[string][]types.NamespacedName{}
	for kind, k := range b.kinds {
		for key := range k.held {
			release[kind] = append(release[kind], key)
		}
		k.held = map[types.NamespacedName]bool{}
		b.publishKind(kind, k)
	}
	callbacks := b.onApproved
	b.mu.Unlock()
	for kind, keys := range release {
		if f := callbacks[kind]; f != nil {
			f(keys)
		}
	}
	return true
}

// Approved reports whether this configuration's removals were approved.
func (b *Brake) Approved() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.approved
}

// Held is, per kind, how many objects are held now.
func (b *Brake) Held() map[string]int {
	out := map[string]int{}
	if b == nil {
		return out
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for kind, k := range b.kinds {
		if len(k.held) > 0 {
			out[kind] = len(k.held)
		}
	}
	return out
}

// ApproveCommand is the kubectl line that approves this configuration's
// removals on the ConfigMap namespace/name.
func (b *Brake) ApproveCommand(namespace, name string) string {
	return fmt.Sprintf("kubectl annotate configmap -n %s %s --overwrite %s=%s", namespace, name, AllowRemovals, b.hash)
}

// Describe says what is held, for /readyz/configuration; "" if nothing.
func (b *Brake) Describe(approve string) string {
	held := b.Held()
	if len(held) == 0 {
		return ""
	}
	kinds := make([]string, 0, len(held))
	for kind, n := range held {
		kinds = append(kinds, fmt.Sprintf("%s %d objects", kind, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("removal brake holding (%s) for configuration %s; to let them go on: %s", strings.Join(kinds, ", "), b.hash, approve)
}

// publishKind sets kind's gauge, if this generation is the live one (b.mu held).
func (b *Brake) publishKind(kind string, k *kindCount) {
	if b.live.Load() {
		telemetry.RemovalsHeld.WithLabelValues(kind).Set(float64(len(k.held)))
	}
}

// Publish makes this generation's counts metawatch_removals_held, replacing
// any other generation's; nil: the metric is reset (no brake).
func (b *Brake) Publish() {
	telemetry.RemovalsHeld.Reset()
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.live.Store(true)
	for kind, k := range b.kinds {
		b.publishKind(kind, k)
	}
}

// Retire stops publishing this generation's counts.
func (b *Brake) Retire() {
	if b != nil {
		b.live.Store(false)
	}
}

// BindFlags registers the limits' flags on fs, with l's values as their defaults.
func (l *Limits) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&l.Objects, "removal-brake-objects", l.Objects,
		"Objects per kind on which one configuration may remove or release keys before metawatch holds the rest, until the configuration is approved "+
			"(annotation "+AllowRemovals+"=<configuration hash> on the selectors ConfigMap; the RemovalsHeld Event gives the kubectl line). "+
			"The bound is this or --removal-brake-share of the kind's cached objects, whichever is more; 0 for both turns the brake off. Sets and copies are never held.")
	fs.Float64Var(&l.SharePercent, "removal-brake-share", l.SharePercent,
		"Percentage of a kind's cached objects on which one configuration may remove or release keys before metawatch holds the rest (see --removal-brake-objects).")
	fs.DurationVar(&l.Window, "removal-brake-window", l.Window,
		"While the removal brake holds nothing, its count starts again after this long, so that removals spread over time (objects leaving a rule one by one) are never held; once it holds, it holds until approved or the configuration changes.")
}
