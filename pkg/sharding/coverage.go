package sharding

import "sync"

// Coverage is the set of buckets a replica's caches hold the objects of. It
// follows the ring's desired buckets (reload.Sharding sets it), and every
// informer made through ListerWatcher with it follows it in turn: a bucket
// that comes is listed alone, a bucket that goes is emptied from the store,
// and the buckets that stay are not listed again (moves.go).
type Coverage struct {
	mu      sync.Mutex
	buckets bucketSet
	changed chan struct{} // closed, and replaced, when buckets change
}

// NewCoverage covers buckets.
func NewCoverage(buckets []Bucket) *Coverage {
	return &Coverage{buckets: setOf(buckets), changed: make(chan struct{})}
}

// Set covers buckets from now on; the informers following the Coverage move.
func (c *Coverage) Set(buckets []Bucket) {
	next := setOf(buckets)
	c.mu.Lock()
	defer c.mu.Unlock()
	if next == c.buckets {
		return
	}
	c.buckets = next
	close(c.changed)
	c.changed = make(chan struct{})
}

// Buckets are the buckets covered now, in order.
func (c *Coverage) Buckets() []Bucket {
	set, _ := c.now()
	return set.list()
}

// now is the buckets covered and a channel closed when they next change.
func (c *Coverage) now() (bucketSet, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buckets, c.changed
}

// bucketSet has a flag per bucket: a value, so copies never share.
type bucketSet [Buckets]bool

func setOf(buckets []Bucket) bucketSet {
	var s bucketSet
	for _, b := range buckets {
		if b >= 0 && b < Buckets {
			s[b] = true
		}
	}
	return s
}

func (s bucketSet) list() []Bucket {
	var out []Bucket
	for b, in := range s {
		if in {
			out = append(out, Bucket(b))
		}
	}
	return out
}

// minus is the buckets of s not in o.
func (s bucketSet) minus(o bucketSet) bucketSet {
	for b := range s {
		s[b] = s[b] && !o[b]
	}
	return s
}

func (s bucketSet) empty() bool { return s == bucketSet{} }

func (s bucketSet) has(uid []byte) bool { return s[bucketOfBytes(uid)] }
