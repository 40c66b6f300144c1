package rulecontroller

import (
	"maps"
	"slices"
	"sort"
)

// mapDiff is what changed between two label or annotation maps.
type mapDiff struct {
	Added   map[string]string `json:"added,omitempty"`
	Changed map[string]string `json:"changed,omitempty"` // key -> new value
	Removed []string          `json:"removed,omitempty"`
}

// Empty reports whether nothing changed.
func (d mapDiff) Empty() bool {
	return len(d.Added) == 0 && len(d.Changed) == 0 && len(d.Removed) == 0
}

// diffMaps compares before and after.
func diffMaps(before, after map[string]string) mapDiff {
	var d mapDiff
	for k, v := range after {
		old, had := before[k]
		switch {
		case !had:
			d.Added = put(d.Added, k, v)
		case old != v:
			d.Changed = put(d.Changed, k, v)
		}
	}
	for k := range before {
		if _, kept := after[k]; !kept {
			d.Removed = append(d.Removed, k)
		}
	}
	sort.Strings(d.Removed)
	return d
}

func put(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// keyDiff is a mapDiff without values, for annotations: their values can be
// large (kubectl's last-applied-configuration) and do not belong in a log line.
type keyDiff struct {
	Added   []string `json:"added,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Keys drops the values of d.
func (d mapDiff) Keys() keyDiff {
	return keyDiff{Added: sortedKeys(d.Added), Changed: sortedKeys(d.Changed), Removed: d.Removed}
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m)) // nil when m is empty
}
