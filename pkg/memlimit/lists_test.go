package memlimit

import (
	"sync/atomic"
	"testing"
	"time"
)

// gcPercent stands for the runtime's GC percent in tests, and counts the
// times the freed heap was returned.
type gcPercent struct {
	now, sets int
	frees     atomic.Int32
}

func (g *gcPercent) set(p int) int {
	before := g.now
	g.now = p
	g.sets++
	return before
}

func listsAt(percent, gc int) (*Lists, *gcPercent) {
	g := &gcPercent{now: gc}
	l := NewLists(percent)
	l.set, l.free = g.set, func() { g.frees.Add(1) }
	return l, g
}

// endAndWait is l.End, and waits for a return of the freed heap it began.
func endAndWait(t *testing.T, l *Lists) {
	t.Helper()
	l.End()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		freeing := l.freeing
		l.mu.Unlock()
		if !freeing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the freed heap is still being returned after 10 s")
		}
	}
}

func TestLists(t *testing.T) {
	cases := map[string]struct {
		gc     int
		steps  string // b: Begin, e: End
		during int    // the GC percent after the steps
		frees  int32  // the times the freed heap was returned
	}{
		"a list lowers the default GC percent":               {gc: 100, steps: "b", during: ListGCPercent},
		"its end gives the default back and the heap freed":  {gc: 100, steps: "be", during: 100, frees: 1},
		"lists of two kinds share one lowering":              {gc: 100, steps: "bb", during: ListGCPercent},
		"the first of two to end keeps it low, and the heap": {gc: 100, steps: "bbe", during: ListGCPercent},
		"the last to end gives both back, once":              {gc: 100, steps: "bbee", during: 100, frees: 1},
		"each time every list has ended, the heap is freed":  {gc: 100, steps: "bebe", during: 100, frees: 2},
		"GOGC=off is left off":                               {gc: -1, steps: "b", during: -1},
		"a GC percent already lower is left":                 {gc: 10, steps: "b", during: 10},
		"one at the list's percent is left, the heap freed":  {gc: ListGCPercent, steps: "be", during: ListGCPercent, frees: 1},
		"an end without a begin changes nothing":             {gc: 100, steps: "e", during: 100},
		"an extra end does not undo a later list's lowering": {gc: 100, steps: "beeb", during: ListGCPercent, frees: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, g := listsAt(ListGCPercent, tc.gc)
			for _, s := range tc.steps {
				if s == 'b' {
					l.Begin()
				} else {
					endAndWait(t, l)
				}
			}
			if g.now != tc.during {
				t.Errorf("GC percent %d after %q from %d, want %d", g.now, tc.steps, tc.gc, tc.during)
			}
			if n := g.frees.Load(); n != tc.frees {
				t.Errorf("the freed heap was returned %d times after %q, want %d", n, tc.steps, tc.frees)
			}
		})
	}
}

// Neither a nil Lists (GOGC set) nor a percent of 0 touches the GC.
func TestListsThatDoNothing(t *testing.T) {
	var none *Lists
	none.Begin()
	none.End()
	l, g := listsAt(0, 100)
	l.Begin()
	endAndWait(t, l)
	if g.sets != 0 || g.frees.Load() != 0 {
		t.Errorf("a Lists of percent 0 set the GC percent %d times and returned the heap %d times", g.sets, g.frees.Load())
	}
	if ListsFromEnv("200") != nil {
		t.Error("GOGC=200 set, yet lists would pace the GC")
	}
	if ListsFromEnv("") == nil {
		t.Error("no GOGC set, yet lists would not pace the GC")
	}
}

// Whatever the order of lists beginning and ending, the GC percent is the
// list's exactly while more lists have begun than ended (and the one before
// was higher), and once every list has ended it is the one before, whatever
// it was.
func FuzzListsGiveTheGCPercentBack(f *testing.F) {
	f.Add(100, []byte{1, 1, 0, 0})
	f.Add(-1, []byte{1, 0, 0, 1})
	f.Add(10, []byte{0, 1, 1, 0, 0})
	f.Fuzz(func(t *testing.T, gc int, steps []byte) {
		if gc < -1 {
			gc = -1
		}
		l, g := listsAt(ListGCPercent, gc)
		underWay := 0
		for _, s := range steps {
			if s%2 == 1 {
				l.Begin()
				underWay++
			} else {
				l.End()
				underWay = max(0, underWay-1)
			}
			want := gc
			if underWay > 0 && gc > ListGCPercent {
				want = ListGCPercent
			}
			if g.now != want {
				t.Fatalf("GC percent %d with %d lists under way from %d, want %d", g.now, underWay, gc, want)
			}
		}
		for range underWay {
			l.End()
		}
		if g.now != gc {
			t.Fatalf("GC percent %d once every list ended, want %d as before", g.now, gc)
		}
	})
}
