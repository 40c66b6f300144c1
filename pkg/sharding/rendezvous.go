package sharding

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
)

// Assign is each bucket's desired owner among members (the live replicas'
// identities), by rendezvous hashing with bounded loads: every member gets
// Buckets/len(members) buckets, rounded down or up (so shares are even to
// one bucket, which plain rendezvous hashing over 64 buckets is not: three
// replicas got 27, 21 and 16), and the buckets it scores highest among those
// still free. Going through all (member, bucket) pairs from the highest
// score down keeps most buckets where plain rendezvous hashing puts them, so
// a join or leave moves about 1/N of them. With no members, no bucket has an
// owner (the result is all empty strings).
func Assign(members []string) [Buckets]string {
	var owners [Buckets]string
	ms := slices.Compact(slices.Sorted(slices.Values(members)))
	if len(ms) == 0 {
		return owners
	}
	capacity := make(map[string]int, len(ms))
	for i, m := range ms {
		capacity[m] = Buckets / len(ms)
		if i < Buckets%len(ms) {
			capacity[m]++
		}
	}
	for _, p := range pairsByScore(ms) {
		if owners[p.bucket] == "" && capacity[p.member] > 0 {
			owners[p.bucket] = p.member
			capacity[p.member]--
		}
	}
	return owners
}

type pair struct {
	member string
	bucket Bucket
	score  uint64
}

// pairsByScore is every (member, bucket) pair, the highest score first, ties
// broken by the lower member, then the lower bucket.
func pairsByScore(members []string) []pair {
	pairs := make([]pair, 0, len(members)*Buckets)
	for _, m := range members {
		for b := range Bucket(Buckets) {
			pairs = append(pairs, pair{member: m, bucket: b, score: score(m, b)})
		}
	}
	slices.SortFunc(pairs, func(x, y pair) int {
		return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.member, y.member), cmp.Compare(x.bucket, y.bucket))
	})
	return pairs
}

// Owned are the buckets whose desired owner is member.
func Owned(owners [Buckets]string, member string) []Bucket {
	var out []Bucket
	for b, owner := range owners {
		if owner == member {
			out = append(out, Bucket(b))
		}
	}
	return out
}

// score is member's rendezvous weight for bucket b: FNV-1a of both, then a
// 64-bit finalizer (splitmix64's), because FNV alone barely mixes inputs that
// differ only in their last bytes, as pod names of one Deployment do.
func score(member string, b Bucket) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(strconv.AppendInt(nil, int64(b), 10))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
