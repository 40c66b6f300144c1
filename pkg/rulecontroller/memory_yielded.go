package rulecontroller

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rules"
)

// yielded remembers, per object, the keys left to another field manager after
// a conflict, with the value that manager had. While that value stays, the key
// is settled: no second apply (which would conflict again), no second Event.
// When the value changes, metawatch tries again. Like reclaims, this is memory
// of this process only: after a restart each conflict is reported once more.
type yielded struct {
	mu    sync.Mutex
	items map[types.NamespacedName]map[string]string // "label/key" or "annotation/key" -> their value
}

func newYielded() *yielded { return &yielded{items: map[types.NamespacedName]map[string]string{}} }

func (y *yielded) add(obj types.NamespacedName, what config.MetadataMap, key, theirs string) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.items[obj] == nil {
		y.items[obj] = map[string]string{}
	}
	y.items[obj][string(what)+"/"+key] = theirs
}

func (y *yielded) forget(obj types.NamespacedName) {
	y.mu.Lock()
	defer y.mu.Unlock()
	delete(y.items, obj)
}

// withoutSettled returns desired without the keys yielded while their value is unchanged.
func (y *yielded) withoutSettled(obj types.NamespacedName, what config.MetadataMap, desired map[string]rules.Owned, current map[string]string) map[string]rules.Owned {
	y.mu.Lock()
	defer y.mu.Unlock()
	entries := y.items[obj]
	if len(entries) == 0 {
		return desired
	}
	out := maps.Clone(desired)
	for k := range desired {
		theirs, ok := entries[string(what)+"/"+k]
		if ok && current[k] == theirs {
			delete(out, k)
		} else if ok {
			delete(entries, string(what)+"/"+k) // their value changed: try again
		}
	}
	return out
}
