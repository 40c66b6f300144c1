package brake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestBound(t *testing.T) {
	cases := map[string]struct {
		limits Bound
		cached int
		want   int
	}{
		"the count when the share of the cached objects is smaller": {Bound{Objects: 100, SharePercent: 1}, 5000, 100},
		"the share when it is larger than the count":                {Bound{Objects: 100, SharePercent: 1}, 50000, 500},
		"a share that is not a whole object is rounded up":          {Bound{Objects: 0, SharePercent: 1}, 150, 2},
		"no cached objects: the count alone":                        {Bound{Objects: 7, SharePercent: 50}, 0, 7},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := c.limits.Of(c.cached); got != c.want {
				t.Errorf("Bound(%d) = %d, want %d", c.cached, got, c.want)
			}
		})
	}
}

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func (c *clock) wait(d time.Duration) { c.t = c.t.Add(d) }

func key(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("o", i)}
}

// installation is one installation's record store, and its processes'
// brakes: each start makes a new Ledger on the same store, as a restart,
// a failover or a rolling update does.
type installation struct {
	store *MemoryStore
	clk   *clock
}

func newInstallation() *installation {
	return &installation{store: &MemoryStore{}, clk: &clock{t: time.Unix(1_000_000, 0)}}
}

// start is a new process's brake of configuration hash.
func (in *installation) start(limits Bound, hash string) *Brake {
	return New(limits, hash, 0, in.ledger())
}

// ledger is a new process's ledger, its changes numbered from 1.
func (in *installation) ledger() *Ledger {
	l := NewLedger(in.store, in.clk.now)
	l.firstChange = func() int { return 0 }
	return l
}

// admitRange admits objects from..to-1 of kind and returns how many it let through.
func admitRange(t testing.TB, b *Brake, kind string, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if b.Admit(t.Context(), kind, key(i), nil, 0) {
			n++
		}
	}
	return n
}

const hashA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const hashB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

func TestAdmit(t *testing.T) {
	limits := Bound{Objects: 3, Window: time.Minute}
	cases := map[string]struct {
		limits   Bound
		cached   int
		before   func(t *testing.T, in *installation)
		objects  int
		admitted int
	}{
		"objects beyond the count are held":                 {limits: limits, objects: 10, admitted: 3},
		"the share of the cached objects raises the bound":  {limits: Bound{Objects: 3, SharePercent: 50, Window: time.Minute}, cached: 10, objects: 10, admitted: 5},
		"no count and no share: the brake is off":           {limits: Bound{Window: time.Minute}, objects: 10, admitted: 10},
		"a restart goes on from the count":                  {limits: limits, objects: 3, before: othersThen(3, 0), admitted: 0},
		"five restarts grant no second bound":               {limits: limits, objects: 3, before: restarts(5), admitted: 0},
		"a window without a hold: the count begins again":   {limits: limits, objects: 3, before: othersThen(3, time.Minute), admitted: 3},
		"within the window the count goes on":               {limits: limits, objects: 3, before: othersThen(3, time.Minute-time.Second), admitted: 0},
		"a held change survives a restart and a new window": {limits: limits, objects: 3, before: othersThen(4, time.Hour), admitted: 0},
		"an object let through once is let through again":   {limits: limits, objects: 3, before: othersThen(0, 0), admitted: 3},
		"each kind has its own count": {limits: limits, objects: 3, admitted: 3, before: func(t *testing.T, in *installation) {
			admitRange(t, in.start(limits, hashA), "Node", 0, 3)
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := newInstallation()
			if c.before != nil {
				c.before(t, in)
			}
			b := in.start(c.limits, hashA)
			admitted := 0
			for i := range c.objects {
				if b.Admit(t.Context(), "Pod", key(i), nil, c.cached) {
					admitted++
				}
			}
			if admitted != c.admitted || b.Held()["Pod"] != c.objects-c.admitted {
				t.Errorf("admitted %d and held %d, want %d and %d", admitted, b.Held()["Pod"], c.admitted, c.objects-c.admitted)
			}
		})
	}
}

// othersThen has a process admit n other pods (beyond the bound: a hold),
// then lets d pass before the next process starts.
func othersThen(n int, d time.Duration) func(*testing.T, *installation) {
	return func(t *testing.T, in *installation) {
		admitRange(t, in.start(Bound{Objects: 3, Window: time.Minute}, hashA), "Pod", 100, 100+n)
		in.clk.wait(d)
	}
}

// restarts is n processes, each admitting as many new pods as it can.
func restarts(n int) func(*testing.T, *installation) {
	return func(t *testing.T, in *installation) {
		for i := range n {
			admitRange(t, in.start(Bound{Objects: 3, Window: time.Minute}, hashA), "Pod", 100+10*i, 110+10*i)
			in.clk.wait(time.Second)
		}
	}
}

// A newer configuration begins a new count, unless a change is held; two
// whose order is not known (files) go on from one count.
func TestAnotherConfiguration(t *testing.T) {
	limits := Bound{Objects: 3, Window: time.Minute}
	cases := map[string]struct {
		before, order uint64
		removedBefore int
		admitted      int
	}{
		"a newer configuration begins a new count":          {before: 1, order: 2, removedBefore: 3, admitted: 3},
		"a held change goes on under a newer configuration": {before: 1, order: 2, removedBefore: 10, admitted: 0},
		"configurations of no known order share the count":  {removedBefore: 3, admitted: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := newInstallation()
			admitRange(t, New(limits, hashB, tc.before, in.ledger()), "Pod", 100, 100+tc.removedBefore)
			if n := admitRange(t, New(limits, hashA, tc.order, in.ledger()), "Pod", 0, 3); n != tc.admitted {
				t.Errorf("%d let through, want %d", n, tc.admitted)
			}
		})
	}
}

// An approval lets the objects held when it is used go on, once: a later
// removal, in the same window or after, is held again under a new change,
// and the used token approves nothing more.
func TestAnApprovalLetsOneChangeGoOnOnce(t *testing.T) {
	in := newInstallation()
	limits := Bound{Objects: 2, Window: time.Minute}
	b := in.start(limits, hashA)
	var told []string
	b.OnHeld(func(kind, token string) { told = append(told, kind+" "+token) })
	var released []types.NamespacedName
	b.OnApproved("Pod", func(keys []types.NamespacedName) { released = append(released, keys...) })

	admitRange(t, b, "Pod", 0, 6)
	b.Forget("Pod", key(5)) // no longer needs a removal
	first := Token(hashA, 1)
	if b.HeldChange() != first || len(told) != 1 || told[0] != "Pod "+first {
		t.Fatalf("held change %q, told %v, want change %s told once", b.HeldChange(), told, first)
	}
	if v := b.Approve(t.Context(), first); v.Problem != "" || v.Released["Pod"] != 3 || len(released) != 3 {
		t.Fatalf("approval %+v released %v, want the 3 objects still held", v, released)
	}
	if n := admitRange(t, b, "Pod", 2, 5); n != 3 {
		t.Errorf("the approved objects: %d let through when queued again, want 3", n)
	}
	in.clk.wait(2 * time.Minute)
	if n := admitRange(t, b, "Pod", 10, 20); n != 2 {
		t.Errorf("a later mass removal: %d let through, want the bound 2 (then held again)", n)
	}
	second := Token(hashA, 2)
	if b.HeldChange() != second || told[len(told)-1] != "Pod "+second {
		t.Errorf("held change %q, told %v, want a new change %s said", b.HeldChange(), told, second)
	}
	if v := b.Approve(t.Context(), first); v.Problem == "" || len(v.Released) != 0 || !strings.Contains(v.Problem, second) {
		t.Errorf("the used approval again: %+v, want a problem naming the change held now", v)
	}
	restarted := in.start(limits, hashA) // the 2 let through lost their keys: 8 objects still need removal
	if n := admitRange(t, restarted, "Pod", 12, 20); n != 0 {
		t.Errorf("after a restart %d let through, want the change still held", n)
	}
	if v := restarted.Approve(t.Context(), second); v.Problem != "" || v.Released["Pod"] != 8 {
		t.Errorf("approving the new change after the restart: %+v, want its 8 objects", v)
	}
}

// An approval with a count lets up to that many of the held objects per
// kind go on, and the rest is a new change; a count above what is held
// leaves no room for a later change's objects.
func TestAnApprovalWithACount(t *testing.T) {
	in := newInstallation()
	b := in.start(Bound{Objects: 1, Window: time.Minute}, hashA)
	admitRange(t, b, "Pod", 0, 5) // 1 through, 4 held
	v := b.Approve(t.Context(), Token(hashA, 1)+",objects=1000")
	if v.Problem != "" || v.Released["Pod"] != 4 {
		t.Fatalf("approval %+v, want the 4 held", v)
	}
	if n := admitRange(t, b, "Pod", 1, 5); n != 4 {
		t.Errorf("%d of the 4 approved let through when queued again, want 4", n)
	}
	if n := admitRange(t, b, "Pod", 10, 15); n != 0 {
		t.Errorf("a later removal: %d let through on an approval of 1000 for 4, want none", n)
	}
	if b.Held()["Pod"] != 5 || b.HeldChange() != Token(hashA, 2) {
		t.Errorf("held %v under %q, want 5 under change 2", b.Held(), b.HeldChange())
	}
	few := in.start(Bound{Objects: 1, Window: time.Minute}, hashA)
	admitRange(t, few, "Pod", 20, 23)
	if v := few.Approve(t.Context(), Token(hashA, 2)+",objects=1"); v.Released["Pod"] != 1 || few.HeldChange() != Token(hashA, 3) {
		t.Errorf("approving 1 of 3: %+v, still held under %q, want 1 released and the rest under change 3", v, few.HeldChange())
	}
}

func TestApprovalValues(t *testing.T) {
	in := newInstallation()
	b := in.start(Bound{Objects: 1, Window: time.Minute}, hashA)
	admitRange(t, b, "Pod", 0, 3)
	cases := map[string]struct {
		value, problem string
	}{
		"the whole hash, as approvals were before": {value: hashA, problem: "is not a held change"},
		"no number":                      {value: "aaaaaaaaaaaa-", problem: "is not a held change"},
		"a count that is not a number":   {value: Token(hashA, 1) + ",objects=many", problem: "objects=N"},
		"another configuration's change": {value: Token(hashB, 1), problem: "names a change of configuration bbbbbbbbbbbb"},
		"a change never held":            {value: Token(hashA, 7), problem: "names no change held"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			v := b.Approve(t.Context(), c.value)
			if !strings.Contains(v.Problem, c.problem) || len(v.Released) != 0 {
				t.Errorf("Approve(%q) = %+v, want a problem with %q", c.value, v, c.problem)
			}
		})
	}
	if b.Held()["Pod"] != 2 {
		t.Errorf("held %v after refused approvals, want 2", b.Held())
	}
}

// A process that has just started does not end a held change nobody
// pushes any more; one that watched a whole window without holding does,
// and the count begins again.
func TestAHeldChangeEndsOnlyOnceWatchedForAWindow(t *testing.T) {
	in := newInstallation()
	limits := Bound{Objects: 1, Window: time.Minute}
	admitRange(t, in.start(limits, hashA), "Pod", 0, 3) // held, then the process dies
	in.clk.wait(time.Hour)
	fresh := in.start(limits, hashA)
	if n := admitRange(t, fresh, "Pod", 10, 11); n != 0 {
		t.Fatalf("a process just started let %d through, want the held change kept", n)
	}
	fresh.Forget("Pod", key(10))
	in.clk.wait(2 * time.Minute)
	watched := in.start(limits, hashA)
	watched.ledger.started = in.clk.t.Add(-2 * time.Minute)
	if n := admitRange(t, watched, "Pod", 20, 22); n != 1 {
		t.Errorf("after a window with nothing held, %d let through, want the bound 1", n)
	}
}

// A replica on an older configuration does not take the record back from
// a newer one (sharded replicas reload one by one).
func TestAnOlderConfigurationDoesNotTakeTheRecordBack(t *testing.T) {
	in := newInstallation()
	limits := Bound{Objects: 2, Window: time.Minute}
	newer := New(limits, hashB, 20, NewLedger(in.store, in.clk.now))
	admitRange(t, newer, "Pod", 0, 2)
	older := New(limits, hashA, 10, NewLedger(in.store, in.clk.now))
	if n := admitRange(t, older, "Pod", 10, 12); n != 0 {
		t.Errorf("the older configuration let %d through, want none", n)
	}
	if n := admitRange(t, New(limits, hashB, 20, NewLedger(in.store, in.clk.now)), "Pod", 20, 22); n != 0 {
		t.Errorf("the newer configuration's count was taken back: %d more let through", n)
	}
}

// failingStore can neither read nor write.
type failingStore struct{}

func (failingStore) Load(context.Context) (Record, string, error) {
	return Record{}, "", errors.New("configmaps \"brake\" is forbidden")
}
func (failingStore) Save(context.Context, Record, string) (string, error) {
	return "", errors.New("configmaps \"brake\" is forbidden")
}
func (failingStore) String() string { return "ConfigMap ns/brake" }

// Where the record cannot be kept, every removal is held, and said.
func TestWithoutItsRecordTheBrakeHoldsEverything(t *testing.T) {
	b := New(Bound{Objects: 100, Window: time.Minute}, hashA, 0, NewLedger(failingStore{}, nil))
	var told []string
	b.OnHeld(func(kind, token string) { told = append(told, kind+" "+token) })
	if n := admitRange(t, b, "Pod", 0, 5); n != 0 {
		t.Errorf("%d let through without a record, want none", n)
	}
	if len(told) != 1 || told[0] != "Pod " {
		t.Errorf("told %v, want once that the record cannot be kept", told)
	}
	if d := b.Describe("fix it"); !strings.Contains(d, "forbidden") || !strings.Contains(d, "ConfigMap ns/brake") {
		t.Errorf("Describe = %q, want the record's problem", d)
	}
}

// An object whose removal landed (the next decision needs none: Forget) is
// counted again when a later change removes another key from it: the
// Namespace relabelled after a rule was removed is a second mass removal,
// not a retry of the first.
func TestALaterRemovalOnTheSameObjectsCountsAgain(t *testing.T) {
	in := newInstallation()
	b := in.start(Bound{Objects: 3, Window: time.Hour}, hashA)
	if n := admitRange(t, b, "Pod", 0, 3); n != 3 {
		t.Fatalf("%d let through, want 3", n)
	}
	if n := admitRange(t, b, "Pod", 0, 3); n != 3 {
		t.Errorf("retries before the removals landed: %d let through, want all 3 (counted once)", n)
	}
	for i := range 3 {
		b.Forget("Pod", key(i))
	}
	if n := admitRange(t, b, "Pod", 0, 3); n != 0 {
		t.Errorf("a second removal on the same objects: %d let through, want none (the bound is used)", n)
	}
}

// A removal of other keys from an object let through is counted even if its
// first removal was never seen to land (no Forget: the event of the write
// was filtered as no rule reads the removed key): only a retry of the same
// keys, or some of them, goes on uncounted.
func TestARemovalOfOtherKeysIsNoRetry(t *testing.T) {
	in := newInstallation()
	b := in.start(Bound{Objects: 3, Window: time.Hour}, hashA)
	admit := func(from, to int, keys ...string) int {
		n := 0
		for i := from; i < to; i++ {
			if b.Admit(t.Context(), "Pod", key(i), keys, 0) {
				n++
			}
		}
		return n
	}
	if n := admit(0, 3, "label marked", "label team"); n != 3 {
		t.Fatalf("%d let through, want 3", n)
	}
	if n := admit(0, 3, "label team"); n != 3 {
		t.Errorf("retries of some of the same keys: %d let through, want all 3 (counted once)", n)
	}
	if n := admit(0, 3, "annotation team"); n != 0 {
		t.Errorf("a removal of another key on the same objects: %d let through, want none (the bound is used)", n)
	}
}

// countingStore counts the saves of the record.
type countingStore struct {
	MemoryStore
	saves int
}

func (c *countingStore) Save(ctx context.Context, r Record, version string) (string, error) {
	c.saves++
	return c.MemoryStore.Save(ctx, r, version)
}

// Holding thousands of objects writes the record a few times, not once per
// object: a count reserves an eighth of what is left at a time, and a hold
// pushes HeldUntil only once a quarter of the window has passed.
func TestHoldingManyObjectsWritesTheRecordAFewTimes(t *testing.T) {
	store := &countingStore{}
	b := New(Bound{Objects: 100, Window: 10 * time.Minute}, hashA, 0, NewLedger(store, nil))
	if n := admitRange(t, b, "Pod", 0, 10000); n != 100 {
		t.Fatalf("%d let through, want the bound 100", n)
	}
	if store.saves > 40 {
		t.Errorf("%d writes of the record for 100 let through and 9,900 held, want a few dozen at most", store.saves)
	}
	t.Logf("%d writes of the record for 100 objects let through and 9,900 held", store.saves)
}
