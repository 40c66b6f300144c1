// Package brake bounds mass removals: how many objects of a kind metawatch
// removes or releases keys on, per change, before an operator says that this
// is meant.
//
// One mistaken edit (a rule removed or narrowed, a Namespace relabelled, a
// guardrail flag narrowed, or the first pass of a replica whose view is
// wrong) would otherwise strip a key from every object of a kind within
// seconds, long before anyone reads an Event. The brake lets a bounded
// number of objects per kind through (a count, or a share of the kind's
// objects, whichever is larger) and holds the rest: their keys stay as they
// are, and metawatch says so, until the operator approves the held change
// (the ConfigMap annotation AllowRemovals, naming the change's Token) or
// raises the bound. Sets and copies are never held: they add, and a
// mistaken add is undone by an edit, where a removal loses the value.
//
// The count lives in a Record the installation keeps in the cluster (Store,
// Ledger), counted before each write is sent: a restart, a crash loop, a
// failover or a rolling update goes on from it, so N restarts do not grant N
// bounds, and sharded replicas share one bound. A newer configuration
// begins a new count, unless a change is held: that count goes on until it
// is approved. Within one configuration the count begins again every Window
// while nothing is held, so that a steady trickle of legitimate removals
// (objects that stop matching a rule one by one, over days) is never held.
//
// An approval lets one change go on, once: it covers the objects held when
// it is used (or as many of them as the operator names), counts them at
// once, is recorded as used, and never approves anything before or after
// it: a later mass removal, a rollback, a restart hold again, under a new
// change with a new token.
package brake

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// AllowRemovals is the ConfigMap annotation that approves one held change:
// its value is the change's Token (as the RemovalsHeld Event and
// /readyz/configuration say it), optionally followed by ",objects=N" to let
// up to N of the objects held under that change go on, per kind, over every
// replica.
const AllowRemovals = "metawatch.dev/allow-removals"

// Brake is one generation's (one configuration's) view of the brake: the
// objects it let through and those it holds, counted in the process's
// Ledger.
type Brake struct {
	bound  Bound
	hash   string
	order  uint64
	ledger *Ledger
	// live: this generation's counts are metawatch_removals_held's (Publish).
	live atomic.Bool

	// counting serializes the writes of the record: one reservation at a
	// time, the others use what it reserved.
	counting sync.Mutex

	mu    sync.Mutex
	kinds map[string]*kindState
	// told is, per kind, the change onHeld was last told of (-1: that the
	// record cannot be written).
	told map[string]int
	// onHeld is told when a kind starts being held under a change (token),
	// or, with token "", that the record cannot be kept.
	onHeld func(kind, token string)
	// onApproved is told, per kind, which held objects an approval let go:
	// they are queued to be written now.
	onApproved map[string]func([]types.NamespacedName)
}

// New returns the brake of the configuration hash, from a version ordered
// order (Record.Order), counting in ledger.
func New(bound Bound, hash string, order uint64, ledger *Ledger) *Brake {
	if ledger == nil {
		ledger = NewLedger(&MemoryStore{}, nil)
	}
	return &Brake{bound: bound, hash: hash, order: order, ledger: ledger,
		kinds: map[string]*kindState{}, told: map[string]int{}, onApproved: map[string]func([]types.NamespacedName){}}
}

// Hash is the hash of the configuration this brake is for.
func (b *Brake) Hash() string { return b.hash }

// Ledger is where this brake counts.
func (b *Brake) Ledger() *Ledger { return b.ledger }

// OnHeld registers f, told once per kind and change when the brake starts
// holding the kind under it (token), and with token "" when it holds
// because its record cannot be kept.
func (b *Brake) OnHeld(f func(kind, token string)) {
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
// in view (the bound's share), may lose keys (named as the caller likes, the
// same way each time) now. It counts the object if so (in the record, before
// the write), and holds it if not. A retry of a removal let through is not
// counted again until Forget; a removal of a key it did not name is.
func (b *Brake) Admit(ctx context.Context, kind string, key types.NamespacedName, keys []string, cached int) bool {
	if b == nil || b.bound.Disabled() {
		return true
	}
	keys = slices.Sorted(slices.Values(keys))
	if b.fromReserve(kind, key, keys) {
		return true
	}
	granted, change, err := b.count(ctx, kind, key, keys, cached)
	if granted {
		return true
	}
	b.hold(kind, key, keys, change, err)
	return false
}

// count counts key in the record, with a few more objects to use next
// (an eighth of what is left), or reports the change it is held under.
func (b *Brake) count(ctx context.Context, kind string, key types.NamespacedName, keys []string, cached int) (granted bool, change int, err error) {
	b.counting.Lock()
	defer b.counting.Unlock()
	if b.fromReserve(kind, key, keys) { // counted meanwhile, by the reservation of another
		return true, 0, nil
	}
	bound := b.bound.Of(cached)
	n := 0
	var since time.Time
	err = b.ledger.update(ctx, func(r *Record) bool {
		before := r.clone()
		n, change = 0, 0
		if !r.claim(b.hash, b.order) {
			return false // a newer configuration counts: this one is about to stop
		}
		w := b.ledger.window(b.bound.Window)
		if k := r.kind(kind, w); k.remaining(bound) > 0 {
			n, since = r.reserve(kind, bound, max(1, k.remaining(bound)/8), w), k.Since
		} else {
			change = r.hold(kind, w)
		}
		return !reflect.DeepEqual(before, *r)
	})
	if err != nil || n == 0 {
		return false, change, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.kind(kind)
	if until := since.Add(b.bound.Window); !until.Equal(k.reserveUntil) {
		k.reserve, k.reserveUntil = 0, until // what is left of an earlier window's count is not this one's
	}
	k.reserve += n - 1
	b.letThrough(kind, k, key, keys)
	return true, 0, nil
}

// hold holds key under change (0 with err: the record could not be kept),
// and tells onHeld once per kind and change.
func (b *Brake) hold(kind string, key types.NamespacedName, keys []string, change int, err error) {
	b.mu.Lock()
	k := b.kind(kind)
	k.held[key] = heldObject{change: change, keys: k.intern(keys)}
	if change > 0 {
		k.pushed = b.ledger.now()
	}
	b.publishKind(kind, k)
	telemetry.RemovalsHeldTotal.WithLabelValues(kind).Inc()
	tell := change // 0: a newer configuration counts; this one stops soon, quietly
	if err != nil {
		tell = -1
	}
	first := tell != 0 && b.told[kind] != tell
	b.told[kind] = tell
	onHeld := b.onHeld
	b.mu.Unlock()
	if first && onHeld != nil {
		token := ""
		if change > 0 {
			token = Token(b.hash, change)
		}
		onHeld(kind, token)
	}
}

// Forget drops key from kind's objects: it needs no removal any more (its
// removal landed, or the rule came back), or it is gone. A later removal on
// it is counted anew: a Namespace relabelled after a rule was removed is a
// second mass removal, not a retry of the first.
func (b *Brake) Forget(kind string, key types.NamespacedName) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := b.kinds[kind]; ok {
		delete(k.touched, key)
		if _, held := k.held[key]; held {
			delete(k.held, key)
			b.publishKind(kind, k)
		}
	}
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

// EachHeld calls f with each object held now, by kind (for the reports).
func (b *Brake) EachHeld(f func(kind string, key types.NamespacedName)) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for kind, k := range b.kinds {
		for key := range k.held {
			f(kind, key)
		}
	}
}

// HeldChange is the token of the newest change this generation holds
// objects under, "" if none (or only because the record cannot be kept).
func (b *Brake) HeldChange() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	newest := 0
	for _, k := range b.kinds {
		for _, h := range k.held {
			newest = max(newest, h.change)
		}
	}
	if newest == 0 {
		return ""
	}
	return Token(b.hash, newest)
}

// ApproveCommand is the kubectl line that approves the held change token
// on the ConfigMap namespace/name.
func ApproveCommand(namespace, name, token string) string {
	return fmt.Sprintf("kubectl annotate configmap -n %s %s --overwrite %s=%s", namespace, name, AllowRemovals, token)
}

// Describe says what is held, for /readyz/configuration; "" if nothing.
// approve says how to let it go on.
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
	out := fmt.Sprintf("removal brake holding (%s)", strings.Join(kinds, ", "))
	if change := b.HeldChange(); change != "" {
		out += " under change " + change
	}
	if err := b.ledger.Err(); err != nil {
		out += fmt.Sprintf("; it holds every removal until it can keep its count: %v", err)
	}
	return out + "; " + approve
}

// publishKind sets kind's gauge, if this generation is the live one (b.mu held).
func (b *Brake) publishKind(kind string, k *kindState) {
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
	for _, kind := range slices.Sorted(maps.Keys(b.kinds)) {
		b.publishKind(kind, b.kinds[kind])
	}
}

// Retire stops publishing this generation's counts.
func (b *Brake) Retire() {
	if b != nil {
		b.live.Store(false)
	}
}

// KeepHolding pushes the record's HeldUntil ahead for every kind this
// generation holds objects of, a quarter Window before it would lapse, until
// ctx ends: while a replica holds, no other replica (nor a restart) begins
// the count again.
func (b *Brake) KeepHolding(ctx context.Context) {
	if b == nil || b.bound.Disabled() {
		return
	}
	every := max(time.Second, b.bound.Window/4)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, kind := range b.holding(every) {
			b.push(ctx, kind)
		}
	}
}

// holding are the kinds with held objects whose HeldUntil this generation
// pushed longer than every ago.
func (b *Brake) holding(every time.Duration) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for kind, k := range b.kinds {
		if len(k.held) > 0 && b.ledger.now().Sub(k.pushed) >= every {
			out = append(out, kind)
		}
	}
	return out
}

// push notes in the record that kind is still held, under the open change
// (a new one if another replica's approval closed it: the objects held here
// join it).
func (b *Brake) push(ctx context.Context, kind string) {
	b.counting.Lock()
	change := 0
	err := b.ledger.update(ctx, func(r *Record) bool {
		before := r.clone()
		if !r.claim(b.hash, b.order) {
			return false
		}
		change = r.hold(kind, b.ledger.window(b.bound.Window))
		return !reflect.DeepEqual(before, *r)
	})
	b.counting.Unlock() // retag tells onHeld, which may approve (and count)
	if err != nil || change == 0 {
		return
	}
	b.retag(kind, change)
}

// retag moves kind's held objects under change, and tells onHeld if that is
// a change it was not told of.
func (b *Brake) retag(kind string, change int) {
	b.mu.Lock()
	k := b.kind(kind)
	k.pushed = b.ledger.now()
	for key, h := range k.held {
		h.change = change
		k.held[key] = h
	}
	tell := b.told[kind] != change && len(k.held) > 0
	b.told[kind] = change
	onHeld := b.onHeld
	b.mu.Unlock()
	if tell && onHeld != nil {
		onHeld(kind, Token(b.hash, change))
	}
}
