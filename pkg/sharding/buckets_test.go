package sharding

import (
	"slices"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	serversharding "k8s.io/apiserver/pkg/sharding"
)

func TestSelector(t *testing.T) {
	tests := map[string]struct {
		buckets []Bucket
		want    string
	}{
		"no buckets is the empty selector": {nil, ""},
		"one bucket is one term": {[]Bucket{1},
			"shardRange(object.metadata.uid, '0x0400000000000000', '0x0800000000000000')"},
		"the last bucket ends at 2^64": {[]Bucket{63},
			"shardRange(object.metadata.uid, '0xfc00000000000000', '0x10000000000000000')"},
		"contiguous buckets merge, in any order and with duplicates": {[]Bucket{3, 1, 2, 2},
			"shardRange(object.metadata.uid, '0x0400000000000000', '0x1000000000000000')"},
		"separate runs are separate terms": {[]Bucket{0, 1, 5},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x0800000000000000') || " +
				"shardRange(object.metadata.uid, '0x1400000000000000', '0x1800000000000000')"},
		"out-of-range buckets are ignored": {[]Bucket{-1, 64, 2},
			"shardRange(object.metadata.uid, '0x0800000000000000', '0x0c00000000000000')"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Selector(tc.buckets); got != tc.want {
				t.Errorf("Selector(%v) =\n%s\nwant\n%s", tc.buckets, got, tc.want)
			}
		})
	}
}

func TestEveryBucketIsOneTermCoveringTheWholeSpace(t *testing.T) {
	all := Range(0, Buckets)
	want := "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"
	if got := Selector(all); got != want {
		t.Errorf("Selector(all) = %s, want %s", got, want)
	}
}

// BucketOf agrees with the hash the API server filters on.
func TestBucketOfIsTheServersHash(t *testing.T) {
	for i := range 1000 {
		uid := types.UID("6f1c2d3e-0000-4000-8000-" + strconv.Itoa(i))
		hash, err := strconv.ParseUint(apisharding.HashField(string(uid)), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := BucketOf(uid), Bucket(hash>>58); got != want {
			t.Fatalf("BucketOf(%s) = %d, want %d (the top 6 bits of the server's hash %x)", uid, got, want, hash)
		}
	}
}

// For any set of buckets and any uid, the API server's own parser accepts
// the selector, and the object matches it exactly when its bucket is in the
// set.
func FuzzSelectorMatchesItsBuckets(f *testing.F) {
	f.Add(uint64(0), "a")
	f.Add(^uint64(0), "")
	f.Add(uint64(0x8000000000000001), "6f1c2d3e-0000-4000-8000-000000000001")
	f.Add(uint64(0x00ff00ff00ff00ff), "uid")
	f.Fuzz(func(t *testing.T, set uint64, uid string) {
		var buckets []Bucket
		for b := range Bucket(Buckets) {
			if set&(1<<b) != 0 {
				buckets = append(buckets, b)
			}
		}
		expr := Selector(buckets)
		if len(buckets) == 0 {
			if expr != "" {
				t.Fatalf("Selector(none) = %q, want empty", expr)
			}
			return
		}
		sel, err := serversharding.Parse(expr)
		if err != nil {
			t.Fatalf("the server's parser refuses %q: %v", expr, err)
		}
		if got, want := len(sel.Requirements()), len(contiguousRuns(buckets)); got != want {
			t.Fatalf("%d terms for %v, want one per run (%d)", got, buckets, want)
		}
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
		matches, err := sel.Matches(obj)
		if err != nil {
			t.Fatal(err)
		}
		if want := slices.Contains(buckets, BucketOf(obj.UID)); matches != want {
			t.Fatalf("uid %q (bucket %d): server-side match %v, want %v for buckets %v", uid, BucketOf(obj.UID), matches, want, buckets)
		}
	})
}
