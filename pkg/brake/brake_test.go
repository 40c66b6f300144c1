package brake

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestBound(t *testing.T) {
	cases := map[string]struct {
		limits Limits
		cached int
		want   int
	}{
		"the count when the share of the cached objects is smaller": {Limits{Objects: 100, SharePercent: 1}, 5000, 100},
		"the share when it is larger than the count":                {Limits{Objects: 100, SharePercent: 1}, 50000, 500},
		"a share that is not a whole object is rounded up":          {Limits{Objects: 0, SharePercent: 1}, 150, 2},
		"no cached objects: the count alone":                        {Limits{Objects: 7, SharePercent: 50}, 0, 7},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := c.limits.Bound(c.cached); got != c.want {
				t.Errorf("Bound(%d) = %d, want %d", c.cached, got, c.want)
			}
		})
	}
}

// clock is a settable time for the window.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func key(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("o", i)}
}

func TestAdmit(t *testing.T) {
	const hash = "abc"
	cases := map[string]struct {
		limits   Limits
		cached   int
		run      func(b *Brake, c *clock) // before the objects are admitted
		objects  int
		admitted int
		held     int
	}{
		"objects beyond the count are held": {
			limits: Limits{Objects: 3, Window: time.Minute}, objects: 10, admitted: 3, held: 7,
		},
		"the share of the cached objects raises the bound": {
			limits: Limits{Objects: 3, SharePercent: 50, Window: time.Minute}, cached: 10, objects: 10, admitted: 5, held: 5,
		},
		"no count and no share: the brake is off": {
			limits: Limits{Window: time.Minute}, objects: 10, admitted: 10,
		},
		"approved by the configuration's hash: nothing is held": {
			limits: Limits{Objects: 3, Window: time.Minute}, objects: 10, admitted: 10,
			run: func(b *Brake, _ *clock) { b.Approve(hash) },
		},
		"approved by another configuration's hash: still braked": {
			limits: Limits{Objects: 3, Window: time.Minute}, objects: 10, admitted: 3, held: 7,
			run: func(b *Brake, _ *clock) { b.Approve("other") },
		},
		"a window without a hold: the count starts again": {
			limits: Limits{Objects: 3, Window: time.Minute}, objects: 3, admitted: 3,
			run: othersThenWait(3, time.Minute),
		},
		"within the window the count goes on": {
			limits: Limits{Objects: 3, Window: time.Minute}, objects: 3, held: 3,
			run: othersThenWait(3, time.Minute-time.Second),
		},
		"once holding, a new window does not let the rest through": {
			limits: Limits{Objects: 3, Window: time.Minute}, objects: 3, held: 4, // and the one held before
			run: othersThenWait(4, time.Hour),
		},
		"an object let through once is let through again": {
			limits: Limits{Objects: 3, Window: time.Minute}, objects: 3, admitted: 3,
			run: func(b *Brake, _ *clock) {
				for i := range 3 {
					b.Admit("Pod", key(i), 0)
				}
			},
		},
		"each kind has its own count": {
			limits: Limits{Objects: 3, Window: time.Minute}, objects: 3, admitted: 3,
			run: func(b *Brake, _ *clock) {
				for i := range 3 {
					b.Admit("Node", key(100+i), 0)
				}
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			clk := &clock{t: time.Unix(0, 0)}
			b := New(c.limits, hash, clk.now)
			if c.run != nil {
				c.run(b, clk)
			}
			admitted := 0
			for i := range c.objects {
				if b.Admit("Pod", key(i), c.cached) {
					admitted++
				}
			}
			if admitted != c.admitted || b.Held()["Pod"] != c.held {
				t.Errorf("admitted %d and held %d, want %d and %d", admitted, b.Held()["Pod"], c.admitted, c.held)
			}
		})
	}
}

// othersThenWait admits n other pods, then lets d pass.
func othersThenWait(n int, d time.Duration) func(*Brake, *clock) {
	return func(b *Brake, c *clock) {
		for i := range n {
			b.Admit("Pod", key(100+i), 0)
		}
		c.t = c.t.Add(d)
	}
}

func TestApproveHandsBackTheHeldObjectsOnce(t *testing.T) {
	b := New(Limits{Objects: 1, Window: time.Minute}, "h", nil)
	var told []string
	b.OnHeld(func(kind string) { told = append(told, kind) })
	var released []types.NamespacedName
	b.OnApproved("Pod", func(keys []types.NamespacedName) { released = append(released, keys...) })
	for i := range 4 {
		b.Admit("Pod", key(i), 0)
	}
	b.Forget("Pod", key(3)) // no longer needs a removal
	if len(told) != 1 {
		t.Errorf("told of a hold %d times, want once per kind", len(told))
	}
	first, again := b.Approve("h"), b.Approve("h") // approving twice hands them back once
	if !first || !again || len(released) != 2 {
		t.Errorf("approval handed back %v, want the 2 objects still held", released)
	}
	if len(b.Held()) != 0 || !b.Admit("Pod", key(9), 0) {
		t.Errorf("approved, the brake still holds %v", b.Held())
	}
}
