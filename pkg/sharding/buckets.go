package sharding

import (
	"fmt"
	"slices"

	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
)

// Buckets is the number of fixed buckets the uid space is cut into: enough
// for a few dozen replicas to get even shares, few enough for a Lease each.
const Buckets = 64

// bucketBits is log2(Buckets): a bucket is the top bits of the uid's hash.
const bucketBits = 6

// uidField is the field the server hashes (the only other is the namespace).
const uidField = "object.metadata.uid"

// Bucket is one of the Buckets fixed ranges of the uid hash, 0 to Buckets-1.
type Bucket int

// BucketOf is the bucket of the object with uid.
func BucketOf(uid types.UID) Bucket { return bucketOfBytes(uid) }

// bucketOfBytes is BucketOf of a uid, also still in the wire's bytes: the
// 64-bit FNV-1a hash (hash/fnv's, written out so that it allocates nothing:
// it runs on every object received when the client filters).
func bucketOfBytes[T ~string | ~[]byte](uid T) Bucket {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := 0; i < len(uid); i++ {
		h ^= uint64(uid[i])
		h *= prime64
	}
	return Bucket(h >> (64 - bucketBits))
}

// String is the bucket's name in Leases, logs and metrics: a fixed width so
// names sort in bucket order.
func (b Bucket) String() string { return fmt.Sprintf("%02d", int(b)) }

// bounds are the bucket's range [start, end) of the hash, printed as the
// server wants them.
func (b Bucket) bounds() (start, end string) {
	return hexBound(uint64(b)), hexBound(uint64(b) + 1)
}

// hexBound is the k-th bucket boundary: k·2^58 in 16 lower-case hex digits,
// or, for the end of the last bucket, 2^64 (the one 17-digit value allowed).
func hexBound(k uint64) string {
	if k == Buckets {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", k<<(64-bucketBits))
}

// Selector is the ShardSelector that asks the server for the objects of
// buckets: one shardRange term per run of contiguous buckets. No buckets is
// the empty selector, which the server reads as everything: callers that own
// nothing must not watch at all rather than send it.
func Selector(buckets []Bucket) string {
	runs := contiguousRuns(buckets)
	reqs := make([]apisharding.ShardRangeRequirement, 0, len(runs))
	for _, r := range runs {
		start, _ := r[0].bounds()
		_, end := r[1].bounds()
		reqs = append(reqs, apisharding.ShardRangeRequirement{Key: uidField, Start: start, End: end})
	}
	if len(reqs) == 0 {
		return ""
	}
	return apisharding.NewSelector(reqs...).String()
}

// Range is the buckets from..to-1, in order.
func Range(from, to Bucket) []Bucket {
	var out []Bucket
	for b := max(from, 0); b < min(to, Buckets); b++ {
		out = append(out, b)
	}
	return out
}

// contiguousRuns are the first and last bucket of each run of consecutive
// buckets, in order, with duplicates and out-of-range buckets ignored.
func contiguousRuns(buckets []Bucket) [][2]Bucket {
	sorted := slices.Sorted(slices.Values(buckets))
	sorted = slices.Compact(sorted)
	var runs [][2]Bucket
	for _, b := range sorted {
		if b < 0 || b >= Buckets {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1][1] == b-1 {
			runs[n-1][1] = b
			continue
		}
		runs = append(runs, [2]Bucket{b, b})
	}
	return runs
}
