package reload

import (
	"slices"
	"testing"

	"github.com/metawatch/metawatch/pkg/sharding"
)

// The audits follow the buckets this replica holds: each change of them
// tells the buckets that came to the OnHeldGained listeners and those that
// went to the OnHeldLost ones, and nothing when they did not change.
func TestHeldBucketsChangesAreTold(t *testing.T) {
	tests := map[string]struct {
		before, after, came, went []sharding.Bucket
	}{
		"the first buckets held all come":          {after: []sharding.Bucket{0, 1}, came: []sharding.Bucket{0, 1}},
		"a bucket handed on goes, the others stay": {before: []sharding.Bucket{0, 1, 2}, after: []sharding.Bucket{0, 2}, went: []sharding.Bucket{1}},
		"a bucket taken comes, the others stay":    {before: []sharding.Bucket{0}, after: []sharding.Bucket{0, 5}, came: []sharding.Bucket{5}},
		"one comes as another goes: both are told": {before: []sharding.Bucket{3}, after: []sharding.Bucket{4}, came: []sharding.Bucket{4}, went: []sharding.Bucket{3}},
		"the same buckets held: no one is told":    {before: []sharding.Bucket{7}, after: []sharding.Bucket{7}},
		"every bucket released at a stop: all go":  {before: []sharding.Bucket{8, 9}, went: []sharding.Bucket{8, 9}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &Sharding{held: tc.before}
			var came, went []sharding.Bucket
			s.OnHeldGained(func(b []sharding.Bucket) { came = append(came, b...) })
			s.OnHeldLost(func(b []sharding.Bucket) { went = append(went, b...) })
			s.noteHeld(tc.after)
			if !slices.Equal(came, tc.came) || !slices.Equal(went, tc.went) {
				t.Errorf("held %v then %v: told %v came and %v went, want %v and %v", tc.before, tc.after, came, went, tc.came, tc.went)
			}
			if !slices.Equal(s.held, tc.after) {
				t.Errorf("remembers %v held, want %v", s.held, tc.after)
			}
		})
	}
}
