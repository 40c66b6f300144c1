package authority

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A few changes under the name that this process did not make, within a
// minute, make the identity refuse every write and say so once; fewer, or
// spread over more than a minute, do not.
func TestAnotherWriterUnderTheNameIsRefused(t *testing.T) {
	cases := map[string]struct {
		applies int
		every   time.Duration
		refused bool
	}{
		"one stray change (a relist of a write before a restart)": {applies: 1, every: time.Second},
		"four within a minute":                       {applies: 4, every: time.Second},
		"five within a minute: another installation": {applies: 5, every: time.Second, refused: true},
		"many, spread over more than a minute each":  {applies: 20, every: 20 * time.Second},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			now := time.Unix(0, 0)
			id := NewIdentity("", "")
			id.now = func() time.Time { return now }
			var told []error
			id.OnRefused(func(err error) { told = append(told, err) })
			for i := range c.applies {
				id.ForeignApply(fmt.Sprintf("Pod ns/p-%d: label team=%q", i, "b"))
				now = now.Add(c.every)
			}
			err := id.Refused()
			if (err != nil) != c.refused || len(told) != map[bool]int{true: 1, false: 0}[c.refused] {
				t.Fatalf("Refused() = %v, told %d times; want refused %v, told once if so", err, len(told), c.refused)
			}
			if c.refused {
				if !errors.Is(err, ErrSharedName) || Classify(Guard{Identity: id}.Write(t.Context(), "u", nil)) != NotSent {
					t.Errorf("a refused write: %v, want ErrSharedName, not sent", err)
				}
				id.ForeignApply("again")
				if len(told) != 1 {
					t.Errorf("told %d times, want once", len(told))
				}
			}
		})
	}
}

// The versions this process wrote are known for at least a rotation, and
// forgotten after two; other versions of the same object never are.
func TestTheIdentityKnowsItsOwnWrites(t *testing.T) {
	now := time.Unix(0, 0)
	id := NewIdentity("metawatch-a", "")
	id.own = newRecentWrites(func() time.Time { return now })
	id.Wrote("uid-1", "10")
	if !id.WroteVersion("uid-1", "10") || id.WroteVersion("uid-1", "11") || id.WroteVersion("uid-2", "10") {
		t.Fatal("a write is known by its object and version only")
	}
	now = now.Add(recentWritesRotation)
	id.Wrote("uid-2", "12") // rotates: uid-1's write is in the older map
	if !id.WroteVersion("uid-1", "10") {
		t.Error("a write one rotation ago is forgotten")
	}
	now = now.Add(recentWritesRotation)
	id.Wrote("uid-3", "13")
	if id.WroteVersion("uid-1", "10") {
		t.Error("a write two rotations ago is still known")
	}
	var none *Identity
	none.Wrote(types.UID("x"), "1")
	if none.WroteVersion("x", "1") || none.Refused() != nil {
		t.Error("a nil identity knows nothing and refuses nothing")
	}
}
