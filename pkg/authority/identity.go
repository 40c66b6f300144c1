package authority

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Identity is the name this installation writes as: the server-side apply
// field manager of its rules, and the name it adopts keys from. It is built
// once, never empty, and handed to everything that writes or reads
// ownership.
//
// Server-side apply replaces a manager's whole owned set on each apply, so
// two installations writing as one name erase each other's keys on every
// write, for ever. The Identity watches for that: it remembers the
// resourceVersions this process's own writes produced, and a change to the
// name's apply entry that none of them made, and that the rules would not
// have made, is another writer's (ForeignApply). Past a few within a
// minute, the Identity refuses every write under the name until the
// process restarts (Refused), and says so once (OnRefused).
type Identity struct {
	// FieldManager is the name the rules apply as.
	FieldManager string
	// Adopted is the name this installation wrote as before, whose keys it
	// takes over ("" if none).
	Adopted string

	own recentWrites

	mu       sync.Mutex
	now      func() time.Time
	foreign  []time.Time // recent foreign applies
	example  string      // the last one, for the message
	refused  error
	onRefuse func(error)
}

// ErrSharedName is the error of every write an Identity refuses: another
// writer applies as its name.
var ErrSharedName = errors.New("field manager shared with another writer")

// Foreign applies within sharedNameWindow past which the name is taken to
// be shared: a real fight makes one per object and round (thousands in
// seconds), while a stray one (a write this process made before a restart,
// seen through a relist) is rare.
const (
	sharedNameEvidence = 5
	sharedNameWindow   = time.Minute
)

// NewIdentity is the identity of fieldManager ("" is DefaultFieldManager)
// adopting adopted.
func NewIdentity(fieldManager, adopted string) *Identity {
	return &Identity{FieldManager: cmp.Or(fieldManager, DefaultFieldManager), Adopted: adopted, now: time.Now, own: newRecentWrites(time.Now)}
}

// Name is the field manager the identity writes as; a nil Identity (a
// Guard built without one, in tests) writes as DefaultFieldManager.
func (id *Identity) Name() string {
	if id == nil {
		return DefaultFieldManager
	}
	return id.FieldManager
}

// Names are the field managers whose managedFields entries metawatch reads:
// the identity's, and the name it adopts from, if any.
func (id *Identity) Names() []string {
	if id.Adopted == "" {
		return []string{id.FieldManager}
	}
	return []string{id.FieldManager, id.Adopted}
}

// OnRefused registers f, told once when the identity starts refusing writes.
func (id *Identity) OnRefused(f func(error)) {
	id.mu.Lock()
	defer id.mu.Unlock()
	id.onRefuse = f
}

// Wrote notes that a write of this process left the object uid at
// resourceVersion rv.
func (id *Identity) Wrote(uid types.UID, rv string) {
	if id != nil && uid != "" && rv != "" {
		id.own.add(uid, rv)
	}
}

// WroteVersion reports whether version rv of the object uid is one this
// process's writes produced (within the last minutes).
func (id *Identity) WroteVersion(uid types.UID, rv string) bool {
	return id != nil && id.own.has(uid, rv)
}

// ForeignApply notes that another writer applied as this identity's field
// manager; example names what it changed, for the message. It reports
// whether the identity refuses writes from now on.
func (id *Identity) ForeignApply(example string) bool {
	if id == nil {
		return false
	}
	id.mu.Lock()
	now := id.now()
	cutoff := now.Add(-sharedNameWindow)
	for len(id.foreign) > 0 && id.foreign[0].Before(cutoff) {
		id.foreign = id.foreign[1:]
	}
	id.foreign = append(id.foreign, now)
	id.example = example
	if id.refused != nil || len(id.foreign) < sharedNameEvidence {
		refused := id.refused != nil
		id.mu.Unlock()
		return refused
	}
	id.refused = fmt.Errorf("%w: another writer applies as field manager %q: %d changes to that name's keys within %s that this process did not make (the last: %s); "+
		"two installations writing as one name erase each other's keys on every write, so this installation writes nothing under it until it restarts with a name of its own: "+
		"give each installation its own --field-manager (the chart derives one per release when fieldManager is left empty), and restart both",
		ErrSharedName, id.FieldManager, len(id.foreign), sharedNameWindow, example)
	err, tell := id.refused, id.onRefuse
	id.mu.Unlock()
	if tell != nil {
		tell(err)
	}
	return true
}

// Refused is why this identity writes nothing, nil while it writes.
func (id *Identity) Refused() error {
	if id == nil {
		return nil
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.refused
}

// recentWrites remembers the versions this process's writes produced, for
// between one and two rotations: two maps of 8-byte fingerprints, the older
// dropped each rotation, so a fan-out of a million writes costs a few MB for
// two minutes, not a table that grows.
type recentWrites struct {
	mu        sync.Mutex
	now       func() time.Time
	seed      maphash.Seed
	cur, prev map[uint64]struct{}
	rotated   time.Time
}

// recentWritesRotation is how long a write is remembered, at least.
const recentWritesRotation = time.Minute

func newRecentWrites(now func() time.Time) recentWrites {
	return recentWrites{now: now, seed: maphash.MakeSeed(), cur: map[uint64]struct{}{}, rotated: now()}
}

func (w *recentWrites) fingerprint(uid types.UID, rv string) uint64 {
	var h maphash.Hash
	h.SetSeed(w.seed)
	_, _ = h.WriteString(string(uid))
	_ = h.WriteByte(0)
	_, _ = h.WriteString(rv)
	return h.Sum64()
}

func (w *recentWrites) add(uid types.UID, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now := w.now(); now.Sub(w.rotated) >= recentWritesRotation {
		w.prev, w.cur, w.rotated = w.cur, map[uint64]struct{}{}, now
	}
	w.cur[w.fingerprint(uid, rv)] = struct{}{}
}

func (w *recentWrites) has(uid types.UID, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.fingerprint(uid, rv)
	_, inCur := w.cur[f]
	_, inPrev := w.prev[f]
	return inCur || inPrev
}
