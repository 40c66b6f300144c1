package preview

import (
	"fmt"
	"io"
	"sort"

	"github.com/metawatch/metawatch/pkg/brake"
)

// BrakeLine is what the removal brake would do with one kind's objects on
// the configuration's first pass: how many would lose keys (removed or
// released), the bound, and how many beyond it would be held until approved.
type BrakeLine struct {
	Kind    string `json:"kind"`
	Objects int    `json:"objects"`
	Losing  int    `json:"losingKeys"`
	Bound   int    `json:"bound"`
	Held    int    `json:"held"`
}

// countLosing counts r's object by kind, and as losing keys if a write of
// r removes or releases one (called by Add).
func (t *Tally) countLosing(r Report) {
	if t.kinds == nil {
		t.kinds, t.losing = map[string]int{}, map[string]int{}
	}
	t.kinds[r.Object.Kind]++
	for _, w := range r.Writes {
		if w.Action == "remove" || w.Action == "release" {
			t.losing[r.Object.Kind]++
			return
		}
	}
}

// Brake is, per kind with objects losing keys, what the brake with limits
// would do: the whole kind is the cached objects of the bound's share.
func (t *Tally) Brake(limits brake.Bound) []BrakeLine {
	var out []BrakeLine
	for kind, n := range t.losing {
		line := BrakeLine{Kind: kind, Objects: t.kinds[kind], Losing: n, Bound: limits.Of(t.kinds[kind])}
		if !limits.Disabled() {
			line.Held = max(0, n-line.Bound)
		}
		out = append(out, line)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// WriteBrake says, per kind, what the removal brake would hold.
func (t *Tally) WriteBrake(w io.Writer, limits brake.Bound) error {
	for _, l := range t.Brake(limits) {
		verdict := "within the bound"
		if l.Held > 0 {
			verdict = fmt.Sprintf("%d would be held by the removal brake until approved (annotation %s=<the held change's token, which the RemovalsHeld Event names> on the selectors ConfigMap)", l.Held, brake.AllowRemovals)
		}
		if _, err := fmt.Fprintf(w, "removal brake: %s: %d of %d objects would lose keys, bound %d (--removal-brake-objects %d, --removal-brake-share %g%%): %s\n",
			l.Kind, l.Losing, l.Objects, l.Bound, limits.Objects, limits.SharePercent, verdict); err != nil {
			return err
		}
	}
	return nil
}
