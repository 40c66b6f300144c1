package sharding

import (
	"hash/fnv"
	"strconv"
)

// Assign is each bucket's desired owner among members (the live replicas'
// identities), by rendezvous hashing: the member with the highest score for
// the bucket, ties broken by the lower identity. With no members, no bucket
// has an owner (the result is all empty strings).
func Assign(members []string) [Buckets]string {
	var owners [Buckets]string
	for b := range Bucket(Buckets) {
		var best uint64
		for _, m := range members {
			s := score(m, b)
			if owners[b] == "" || s > best || s == best && m < owners[b] {
				owners[b], best = m, s
			}
		}
	}
	return owners
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
