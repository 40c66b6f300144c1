package sharding

import (
	"fmt"
	"slices"
	"testing"
)

func members(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("metawatch-7d9f8c6b5d-%05x", i*7919)
	}
	return out
}

func TestAssignGivesEveryBucketOneOwnerAndEachMemberAShare(t *testing.T) {
	tests := map[string]struct{ n int }{
		"one replica owns everything": {1},
		"two replicas":                {2},
		"three replicas":              {3},
		"eight replicas":              {8},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ms := members(tc.n)
			owners := Assign(ms)
			total := 0
			for _, m := range ms {
				share := len(Owned(owners, m))
				total += share
				// Rendezvous hashing is even only on average: allow half to twice a fair share.
				if fair := Buckets / tc.n; share < fair/2 || share > 2*fair {
					t.Errorf("%s owns %d buckets, want about %d", m, share, fair)
				}
			}
			if total != Buckets {
				t.Errorf("%d buckets owned in all, want %d, each once", total, Buckets)
			}
		})
	}
}

func TestAssignWithNoMembersOwnsNothing(t *testing.T) {
	if owners := Assign(nil); slices.ContainsFunc(owners[:], func(o string) bool { return o != "" }) {
		t.Errorf("Assign(nil) = %v, want no owners", owners)
	}
}

// The answer depends on the set of members, not on their order, so replicas
// that list the member Leases in different orders agree.
func FuzzAssignIgnoresOrder(f *testing.F) {
	f.Add(uint8(3), uint8(1))
	f.Add(uint8(10), uint8(7))
	f.Fuzz(func(t *testing.T, n, rotate uint8) {
		ms := members(int(n%16) + 1)
		rotated := append(slices.Clone(ms[int(rotate)%len(ms):]), ms[:int(rotate)%len(ms)]...)
		slices.Reverse(rotated)
		if Assign(ms) != Assign(rotated) {
			t.Fatalf("Assign differs for %v and %v", ms, rotated)
		}
	})
}

// A replica joining takes buckets only for itself, and one leaving hands on
// only its own: no bucket moves between two replicas that both stay.
func FuzzMembershipChangeMovesOnlyTheChangedMembersBuckets(f *testing.F) {
	f.Add(uint8(2), uint8(0))
	f.Add(uint8(3), uint8(2))
	f.Add(uint8(9), uint8(4))
	f.Fuzz(func(t *testing.T, n, leaver uint8) {
		before := members(int(n%16) + 1)
		joiner := "metawatch-7d9f8c6b5d-joiner"
		after := Assign(append(slices.Clone(before), joiner))
		for b, owner := range Assign(before) {
			if after[b] != owner && after[b] != joiner {
				t.Fatalf("join: bucket %d moved from %s to %s, not to the joiner", b, owner, after[b])
			}
		}
		if len(before) == 1 {
			return
		}
		gone := before[int(leaver)%len(before)]
		remaining := slices.DeleteFunc(slices.Clone(before), func(m string) bool { return m == gone })
		was, now := Assign(before), Assign(remaining)
		for b := range now {
			if was[b] != gone && now[b] != was[b] {
				t.Fatalf("leave of %s: bucket %d moved from %s to %s", gone, b, was[b], now[b])
			}
		}
	})
}
