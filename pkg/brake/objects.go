package brake

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// kindState is one kind's objects in this generation.
type kindState struct {
	// touched are the objects let through whose removal has not been seen
	// to land yet, with the keys it removes: a retry (the same keys, or some
	// of them) is not counted again, a removal of other keys is.
	touched map[types.NamespacedName][]string
	// held are the objects held, with the keys their removal takes off.
	held map[types.NamespacedName]heldObject
	// reserve is how many objects were counted in the record and not used
	// yet, of the count whose window ends at reserveUntil.
	reserve      int
	reserveUntil time.Time
	// pushed is when this generation last pushed the record's HeldUntil.
	pushed time.Time
	// keySets are the key lists of touched and held, one copy each: a mass
	// removal takes the same keys off every object.
	keySets map[string][]string
}

// heldObject is one held object: under which change (0: the record could
// not be kept), and the keys its removal takes off.
type heldObject struct {
	change int
	keys   []string
}

func (b *Brake) kind(kind string) *kindState {
	k, ok := b.kinds[kind]
	if !ok {
		k = &kindState{touched: map[types.NamespacedName][]string{}, held: map[types.NamespacedName]heldObject{}, keySets: map[string][]string{}}
		b.kinds[kind] = k
	}
	return k
}

// intern is keys (sorted), as the one copy k keeps of that list; never nil.
func (k *kindState) intern(keys []string) []string {
	id := strings.Join(keys, "\x00")
	if kept, ok := k.keySets[id]; ok {
		return kept
	}
	kept := append([]string{}, keys...)
	k.keySets[id] = kept
	return kept
}

// fromReserve lets key through if it was already, for keys, or if objects
// counted in the record are left to use in their window.
func (b *Brake) fromReserve(kind string, key types.NamespacedName, keys []string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.kind(kind)
	if k.reserve > 0 && !b.ledger.now().Before(k.reserveUntil) {
		k.reserve = 0 // the window it was counted in is over: the next count says what is left
	}
	switch {
	case within(keys, k.touched[key]):
		return true // counted already: a retry, or a second decision on it
	case k.reserve > 0:
		k.reserve--
		b.letThrough(kind, k, key, keys)
		return true
	}
	return false
}

// within reports whether every key of keys is in let (both sorted); nil
// let: nothing was let through.
func within(keys, let []string) bool {
	if let == nil {
		return false
	}
	for _, k := range keys {
		if _, found := slices.BinarySearch(let, k); !found {
			return false
		}
	}
	return true
}

// letThrough marks key as let through for keys (b.mu held).
func (b *Brake) letThrough(kind string, k *kindState, key types.NamespacedName, keys []string) {
	k.touched[key] = k.intern(keys)
	if _, held := k.held[key]; held {
		delete(k.held, key)
		b.publishKind(kind, k)
	}
}
