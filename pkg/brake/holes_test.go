package brake

import (
	"testing"
	"time"
)

// Ways around the bound that a review found, each a regression test: every
// one let more objects go than the bound and the approvals given allow.
func TestNoWayAroundTheBound(t *testing.T) {
	limits := Bound{Objects: 10, Window: time.Minute}
	cases := map[string]struct {
		// run plays the installation's history and returns how many objects
		// lost keys beyond what the bound and the approvals allow.
		run func(t *testing.T, in *installation) int
	}{
		"an approval left on the ConfigMap names no change of a record begun again": {run: func(t *testing.T, in *installation) int {
			b := in.start(limits, hashA)
			admitRange(t, b, "Pod", 0, 20)
			b.Approve(t.Context(), Token(hashA, 1)) // used, and left on the ConfigMap
			in.store = &MemoryStore{}               // the record deleted, as its error message says to
			l := NewLedger(in.store, in.clk.now)    // numbered from a random first change
			again := New(limits, hashA, 0, l)
			through := admitRange(t, again, "Pod", 100, 200)
			v := again.Approve(t.Context(), Token(hashA, 1))
			return through + v.Released["Pod"] - 10
		}},
		"approved objects that go away leave no room to a later change": {run: func(t *testing.T, in *installation) int {
			b := in.start(limits, hashA)
			admitRange(t, b, "Pod", 0, 100) // 10 through, 90 held
			b.Approve(t.Context(), Token(hashA, 1)+",objects=500")
			for i := 10; i < 55; i++ {
				b.Forget("Pod", key(i)) // gone, or the rule came back: never written
			}
			return admitRange(t, b, "Pod", 1000, 1100) // a later mistake: a new change, held
		}},
		"an operator's count is one count over every replica": {run: func(t *testing.T, in *installation) int {
			one, two := in.start(limits, hashA), in.start(limits, hashA)
			through := admitRange(t, one, "Pod", 0, 50) + admitRange(t, two, "Pod", 100, 150)
			released := one.Approve(t.Context(), Token(hashA, 1)+",objects=20").Released["Pod"] +
				two.Approve(t.Context(), Token(hashA, 1)+",objects=20").Released["Pod"]
			return through + released - 10 - 20
		}},
		"what is left of a window's reservation is not spent in the next": {run: func(t *testing.T, in *installation) int {
			b := in.start(Bound{Objects: 100, Window: time.Minute}, hashA)
			admitRange(t, b, "Pod", 0, 1) // reserves an eighth of the bound more
			in.clk.wait(time.Minute)
			return admitRange(t, b, "Pod", 100, 300) - 100 // the next window's count
		}},
		"two configurations removing during a rollout share one count once held": {run: func(t *testing.T, in *installation) int {
			a, b := in.start(limits, hashA), in.start(limits, hashB)
			through := 0
			for i := range 100 {
				through += admitRange(t, a, "Pod", 2*i, 2*i+1) + admitRange(t, b, "Pod", 1000+2*i, 1000+2*i+1)
			}
			return through - 2*10 // at most a bound each before the first hold
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if over := tc.run(t, newInstallation()); over > 0 {
				t.Errorf("%d objects lost keys beyond the bound and the approvals", over)
			}
		})
	}
}
