package rulecontroller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/config"
)

// fights are the keys metawatch stopped writing on an object because
// something else keeps undoing it there: it sets a key another controller
// keeps removing, or removes one that keeps coming back. Past maxTakeovers
// undos within takeoverWindow, metawatch leaves the key as the other side
// has it for fightBackoff, then tries once more; undone again, it leaves
// it twice as long (up to maxFightBackoff). When the other side has stopped,
// that try sticks, and the fight is forgotten a takeoverWindow later.
//
// Memory of this process only: a restart tries again, and counts anew.
type fights struct {
	mu    sync.Mutex
	now   func() time.Time
	items map[types.NamespacedName]map[string]*fight // "label/key" -> its fight
}

// fight is one key's fight on one object.
type fight struct {
	until   time.Time     // metawatch leaves the key until then
	backoff time.Duration // how long it left it last
	told    bool          // the OwnershipFight Event of this round was recorded
}

// fightBackoff is how long the first round leaves a key (a variable for
// tests); maxFightBackoff the longest a round does.
var fightBackoff = 5 * time.Minute

const maxFightBackoff = time.Hour

func newFights() *fights {
	return &fights{now: time.Now, items: map[types.NamespacedName]map[string]*fight{}}
}

// undone notes that something else undid metawatch's write of key on obj,
// with count the undos takeovers counted within its window, and reports
// whether a fight (a new one, or a round after a try that was undone again)
// began.
func (f *fights) undone(obj types.NamespacedName, what config.MetadataMap, key string, count int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, now := string(what)+"/"+key, f.now()
	if existing := f.items[obj][id]; existing != nil {
		if now.Before(existing.until) {
			return false // left to the other side already
		}
		existing.backoff = min(2*existing.backoff, maxFightBackoff)
		existing.until, existing.told = now.Add(existing.backoff), false
		return true
	}
	if count <= maxTakeovers {
		return false
	}
	if f.items[obj] == nil {
		f.items[obj] = map[string]*fight{}
	}
	f.items[obj][id] = &fight{until: now.Add(fightBackoff), backoff: fightBackoff}
	return true
}

// leaves reports until when metawatch leaves key on obj to the other side
// (zero: it does not), and whether this is the first time this round (to
// be said). A fight whose last try stuck for a takeoverWindow is forgotten.
func (f *fights) leaves(obj types.NamespacedName, what config.MetadataMap, key string) (until time.Time, first bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, now := string(what)+"/"+key, f.now()
	existing := f.items[obj][id]
	switch {
	case existing == nil:
		return time.Time{}, false
	case now.Before(existing.until):
		first, existing.told = !existing.told, true
		return existing.until, first
	case now.After(existing.until.Add(takeoverWindow)):
		delete(f.items[obj], id)
		if len(f.items[obj]) == 0 {
			delete(f.items, obj)
		}
	}
	return time.Time{}, false
}

func (f *fights) forget(obj types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.items, obj)
}
