package brake

import (
	"flag"
	"fmt"
	"math"
	"time"
)

// Limits are the operator's bound (flags --removal-brake-objects,
// --removal-brake-share, --removal-brake-window).
type Limits struct {
	// Objects per kind that may lose keys per generation and window.
	Objects int
	// SharePercent of the kind's cached objects that may: the bound is the
	// larger of the two, so that a large kind is not held for a change
	// proportionate to its size.
	SharePercent float64
	// Window after which the count restarts, while nothing is held.
	Window time.Duration
}

// DefaultLimits are the flags' defaults.
func DefaultLimits() Limits {
	return Limits{Objects: 100, SharePercent: 1, Window: 10 * time.Minute}
}

// Disabled reports whether these limits brake nothing: no count and no share.
func (l Limits) Disabled() bool { return l.Objects <= 0 && l.SharePercent <= 0 }

// Bound is how many objects of a kind with cached objects may lose keys:
// max(Objects, ceil(SharePercent% of cached)).
func (l Limits) Bound(cached int) int {
	share := int(math.Ceil(l.SharePercent * float64(cached) / 100))
	return max(l.Objects, share)
}

// Validate says what is wrong with the limits, in the flags' words.
func (l Limits) Validate() error {
	switch {
	case l.Objects < 0:
		return fmt.Errorf("--removal-brake-objects is %d: expected 0 or more objects (0 with --removal-brake-share=0 turns the brake off)", l.Objects)
	case l.SharePercent < 0 || l.SharePercent > 100:
		return fmt.Errorf("--removal-brake-share is %g: expected a percentage from 0 to 100", l.SharePercent)
	case l.Window <= 0:
		return fmt.Errorf("--removal-brake-window is %s: expected a positive duration, e.g. 10m", l.Window)
	}
	return nil
}

// BindFlags registers the limits' flags on fs, with l's values as their defaults.
func (l *Limits) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&l.Objects, "removal-brake-objects", l.Objects,
		"Objects per kind on which one configuration may remove or release keys before metawatch holds the rest, until the configuration is approved "+
			"(annotation "+AllowRemovals+"=<configuration hash> on the selectors ConfigMap; the RemovalsHeld Event gives the kubectl line). "+
			"The bound is this or --removal-brake-share of the kind's cached objects, whichever is more; 0 for both turns the brake off. Sets and copies are never held.")
	fs.Float64Var(&l.SharePercent, "removal-brake-share", l.SharePercent,
		"Percentage of a kind's cached objects on which one configuration may remove or release keys before metawatch holds the rest (see --removal-brake-objects).")
	fs.DurationVar(&l.Window, "removal-brake-window", l.Window,
		"While the removal brake holds nothing, its count starts again after this long, so that removals spread over time (objects leaving a rule one by one) are never held; once it holds, it holds until approved or the configuration changes.")
}
