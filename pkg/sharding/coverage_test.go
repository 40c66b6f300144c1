package sharding

import (
	"testing"
)

// For any two sets of buckets: a set read back is the same set; what goes
// (from minus to) and what stays (from minus what goes) add up to from, and
// what comes (to minus from) never overlaps it; setting a Coverage to what it
// covers wakes nobody, and setting it to another set wakes its followers once.
func FuzzCoverageMoves(f *testing.F) {
	f.Add(uint64(0), uint64(0))
	f.Add(^uint64(0), uint64(0))
	f.Add(uint64(0x00000000ffffffff), uint64(0xffffffff00000000))
	f.Add(uint64(0x8000000000000001), uint64(0x8000000000000001))
	f.Fuzz(func(t *testing.T, fromBits, toBits uint64) {
		from, to := bitsSet(fromBits), bitsSet(toBits)
		if got := setOf(from.list()); got != from {
			t.Fatalf("setOf(%v.list()) = %v", from.list(), got.list())
		}
		gone, came := from.minus(to), to.minus(from)
		stayed := from.minus(gone)
		for b := range Bucket(Buckets) {
			switch {
			case gone[b] && (to[b] || !from[b]):
				t.Fatalf("bucket %d went but is in to=%v or not in from=%v", b, to[b], from[b])
			case came[b] && (from[b] || !to[b]):
				t.Fatalf("bucket %d came but is in from=%v or not in to=%v", b, from[b], to[b])
			case stayed[b] != (from[b] && to[b]):
				t.Fatalf("bucket %d stayed=%v, want it to stay exactly when in both", b, stayed[b])
			}
		}
		c := NewCoverage(from.list())
		_, changed := c.now()
		c.Set(from.list())
		if isClosed(changed) {
			t.Fatal("setting the buckets covered already woke the followers")
		}
		c.Set(to.list())
		if woke := isClosed(changed); woke != (from != to) {
			t.Fatalf("a change from %v to %v woke the followers: %v", from.list(), to.list(), woke)
		}
		if got := c.Buckets(); setOf(got) != to {
			t.Fatalf("Buckets() = %v after Set(%v)", got, to.list())
		}
	})
}

func bitsSet(bits uint64) bucketSet {
	var s bucketSet
	for b := range Bucket(Buckets) {
		s[b] = bits&(1<<b) != 0
	}
	return s
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
