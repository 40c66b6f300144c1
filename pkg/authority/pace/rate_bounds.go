package pace

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"time"
)

// RateBounds are the operator's bounds on the write rate, in writes per second.
type RateBounds struct {
	// Min is the floor: the rate never goes below it, however loaded the
	// server (a 429 still pauses writes for its Retry-After).
	Min float64
	// Max is the ceiling: the rate never climbs above it, however fast the server.
	Max float64
	// Start is where the rate starts (clamped into Min and Max).
	Start float64
	// RetryAfterMax is the longest pause a 429's Retry-After imposes on the
	// writes, and the longest client-go's own retry of a 429 waits: a
	// server (or a proxy) asking for an hour would otherwise stop every
	// write for that hour. Zero: DefaultRetryAfterMax.
	RetryAfterMax time.Duration
}

// DefaultRetryAfterMax is --write-retry-after-max's default: the API
// server's own Retry-After is a few seconds, and 30 s is also how long a
// write may take (authority's writeTimeout), so a longer pause could only
// fail the writes waiting for it.
const DefaultRetryAfterMax = 30 * time.Second

// DefaultRateBounds are the flags' defaults: a floor of 10 writes/s, a
// ceiling of 1000, the start at 50, the fixed rate writes had before, and
// pauses of at most 30 s.
func DefaultRateBounds() RateBounds {
	return RateBounds{Min: 10, Max: 1000, Start: 50, RetryAfterMax: DefaultRetryAfterMax}
}

// BindFlags registers --write-rate-min, --write-rate-max and
// --write-retry-after-max on fs, with b's values as their defaults.
func (b *RateBounds) BindFlags(fs *flag.FlagSet) {
	fs.Float64Var(&b.Min, "write-rate-min", b.Min,
		"Writes per second metawatch always allows itself, however loaded the API server (a 429 still pauses writes for the time its Retry-After asks).")
	fs.Float64Var(&b.Max, "write-rate-max", b.Max,
		"Writes per second metawatch never exceeds, however fast the API server answers. Between the two, the rate climbs while writes are answered quickly and falls at once on a 429 or slow answers.")
	fs.DurationVar(&b.RetryAfterMax, "write-retry-after-max", b.RetryAfterMax,
		"The longest pause of the writes a 429's Retry-After may ask for (client-go's own retry of the 429 included): a longer one is cut to this. "+
			"A write that would have to wait past its deadline is not sent, and is tried again once the pause is over.")
}

// Validate says every bound that cannot work, in the flags' words.
func (b RateBounds) Validate() error {
	var errs []error
	if !usableRate(b.Min) {
		errs = append(errs, fmt.Errorf("--write-rate-min is %g: expected a finite positive number of writes per second, e.g. 10", b.Min))
	}
	if !usableRate(b.Max) {
		errs = append(errs, fmt.Errorf("--write-rate-max is %g: expected a finite positive number of writes per second, e.g. 1000", b.Max))
	}
	if b.RetryAfterMax <= 0 {
		errs = append(errs, fmt.Errorf("--write-retry-after-max is %s: expected a positive duration, the longest a 429 may pause the writes, e.g. 30s", b.RetryAfterMax))
	}
	if usableRate(b.Min) && usableRate(b.Max) && b.Min > b.Max {
		errs = append(errs, fmt.Errorf("--write-rate-min (%g) is above --write-rate-max (%g): the floor must be at most the ceiling; raise --write-rate-max or lower --write-rate-min", b.Min, b.Max))
	}
	return errors.Join(errs...)
}

// usableRate reports whether r can bound the rate: positive and finite. An
// infinite one would reach the limiter, whose burst is a tenth of the rate
// as an int, which no infinity converts to.
func usableRate(r float64) bool { return r > 0 && !math.IsInf(r, 1) }

// String is the bounds as the start-up log says them.
func (b RateBounds) String() string {
	return fmt.Sprintf("%g-%g writes/s, starting at %g, a 429 pausing them at most %s", b.Min, b.Max, b.Start, b.retryAfterMax())
}

// retryAfterMax is the cap on a 429's pause: RetryAfterMax, or its default if unset.
func (b RateBounds) retryAfterMax() time.Duration {
	if b.RetryAfterMax <= 0 {
		return DefaultRetryAfterMax
	}
	return b.RetryAfterMax
}
