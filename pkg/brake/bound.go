package brake

import (
	"flag"
	"fmt"
	"math"
	"time"
)

// Bound is how many objects of a kind may lose keys to one change before the
// brake holds the rest: the operator's flags --removal-brake-objects,
// --removal-brake-share and --removal-brake-window.
type Bound struct {
	// Objects per kind that may lose keys per generation and window.
	Objects int
	// SharePercent of the kind's cached objects that may: the bound is the
	// larger of the two, so that a large kind is not held for a change
	// proportionate to its size.
	SharePercent float64
	// Window after which the count restarts, while nothing is held.
	Window time.Duration
}

// DefaultBound is the flags' defaults.
func DefaultBound() Bound {
	return Bound{Objects: 100, SharePercent: 1, Window: 10 * time.Minute}
}

// Disabled reports whether this bound brakes nothing: no count and no share.
func (b Bound) Disabled() bool { return b.Objects <= 0 && b.SharePercent <= 0 }

// Of is how many objects of a kind with cached objects may lose keys:
// max(Objects, ceil(SharePercent% of cached)).
func (b Bound) Of(cached int) int {
	share := int(math.Ceil(b.SharePercent * float64(cached) / 100))
	return max(b.Objects, share)
}

// Validate says what is wrong with the bound, in the flags' words.
func (b Bound) Validate() error {
	switch {
	case b.Objects < 0:
		return fmt.Errorf("--removal-brake-objects is %d: expected 0 or more objects (0 with --removal-brake-share=0 turns the brake off)", b.Objects)
	case b.SharePercent < 0 || b.SharePercent > 100:
		return fmt.Errorf("--removal-brake-share is %g: expected a percentage from 0 to 100", b.SharePercent)
	case b.Window <= 0:
		return fmt.Errorf("--removal-brake-window is %s: expected a positive duration, e.g. 10m", b.Window)
	}
	return nil
}

// BindFlags registers the bound's flags on fs, with b's values as their defaults.
func (b *Bound) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&b.Objects, "removal-brake-objects", b.Objects,
		"Objects per kind on which one configuration may remove or release keys before metawatch holds the rest, until the configuration is approved "+
			"(annotation "+AllowRemovals+"=<configuration hash> on the selectors ConfigMap; the RemovalsHeld Event gives the kubectl line). "+
			"The bound is this or --removal-brake-share of the kind's cached objects, whichever is more; 0 for both turns the brake off. Sets and copies are never held.")
	fs.Float64Var(&b.SharePercent, "removal-brake-share", b.SharePercent,
		"Percentage of a kind's cached objects on which one configuration may remove or release keys before metawatch holds the rest (see --removal-brake-objects).")
	fs.DurationVar(&b.Window, "removal-brake-window", b.Window,
		"While the removal brake holds nothing, its count starts again after this long, so that removals spread over time (objects leaving a rule one by one) are never held; once it holds, it holds until approved or the configuration changes.")
}
