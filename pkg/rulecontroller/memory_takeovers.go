package rulecontroller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/config"
)

// Two controllers that both take one key (a rule with force: true against
// another controller that forces, or a controller that rewrites a key each
// time metawatch puts it back) would fight forever, each write undoing the
// other. takeovers counts, per object and key, how often another manager took
// a key metawatch owned; past maxTakeovers within takeoverWindow, metawatch
// stops taking that key back (see ruleReconciler.yield). The window is long
// enough for a slow undoer: a controller that strips a key from 10,000
// objects takes minutes a round, and undos spread over a window of five
// minutes never met, so the two wrote for ever.
const (
	maxTakeovers   = 3
	takeoverWindow = 30 * time.Minute
)

type takeovers struct {
	mu    sync.Mutex
	now   func() time.Time
	items map[types.NamespacedName]map[string][]time.Time // "label/key" -> when it was taken
}

func newTakeovers() *takeovers {
	return &takeovers{now: time.Now, items: map[types.NamespacedName]map[string][]time.Time{}}
}

// add records that another manager took key from metawatch on obj, and
// returns how often it did within takeoverWindow.
func (t *takeovers) add(obj types.NamespacedName, what config.MetadataMap, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.items[obj] == nil {
		t.items[obj] = map[string][]time.Time{}
	}
	id := string(what) + "/" + key
	t.items[obj][id] = append(t.recentLocked(obj, id), t.now())
	return len(t.items[obj][id])
}

// fighting reports whether key was taken from metawatch more than
// maxTakeovers times within the last takeoverWindow.
func (t *takeovers) fighting(obj types.NamespacedName, what config.MetadataMap, key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.recentLocked(obj, string(what)+"/"+key)) > maxTakeovers
}

func (t *takeovers) recentLocked(obj types.NamespacedName, id string) []time.Time {
	times := t.items[obj][id]
	cutoff := t.now().Add(-takeoverWindow)
	for len(times) > 0 && times[0].Before(cutoff) {
		times = times[1:]
	}
	return times
}

func (t *takeovers) forget(obj types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.items, obj)
}
