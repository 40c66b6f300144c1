package pace

import (
	"errors"
	"flag"
	"fmt"
	"math"
)

// Limits are the operator's bounds on the write rate, in writes per second.
type Limits struct {
	// Min is the floor: the rate never goes below it, however loaded the
	// server (a 429 still pauses writes for its Retry-After).
	Min float64
	// Max is the ceiling: the rate never climbs above it, however fast the server.
	Max float64
	// Start is where the rate starts (clamped into Min and Max).
	Start float64
}

// DefaultLimits are the flags' defaults: a floor of 10 writes/s, a
// ceiling of 1000, and the start at 50, the fixed rate writes had before.
func DefaultLimits() Limits { return Limits{Min: 10, Max: 1000, Start: 50} }

// BindFlags registers --write-rate-min and --write-rate-max on fs, with l's values as their defaults.
func (l *Limits) BindFlags(fs *flag.FlagSet) {
	fs.Float64Var(&l.Min, "write-rate-min", l.Min,
		"Writes per second metawatch always allows itself, however loaded the API server (a 429 still pauses writes for the time its Retry-After asks).")
	fs.Float64Var(&l.Max, "write-rate-max", l.Max,
		"Writes per second metawatch never exceeds, however fast the API server answers. Between the two, the rate climbs while writes are answered quickly and falls at once on a 429 or slow answers.")
}

// Validate says every bound that cannot work, in the flags' words.
func (l Limits) Validate() error {
	var errs []error
	if !usableRate(l.Min) {
		errs = append(errs, fmt.Errorf("--write-rate-min is %g: expected a finite positive number of writes per second, e.g. 10", l.Min))
	}
	if !usableRate(l.Max) {
		errs = append(errs, fmt.Errorf("--write-rate-max is %g: expected a finite positive number of writes per second, e.g. 1000", l.Max))
	}
	if usableRate(l.Min) && usableRate(l.Max) && l.Min > l.Max {
		errs = append(errs, fmt.Errorf("--write-rate-min (%g) is above --write-rate-max (%g): the floor must be at most the ceiling; raise --write-rate-max or lower --write-rate-min", l.Min, l.Max))
	}
	return errors.Join(errs...)
}

// usableRate reports whether r can bound the rate: positive and finite. An
// infinite one would reach the limiter, whose burst is a tenth of the rate
// as an int, which no infinity converts to.
func usableRate(r float64) bool { return r > 0 && !math.IsInf(r, 1) }

// String is the limits as the start-up log says them.
func (l Limits) String() string {
	return fmt.Sprintf("%g-%g writes/s, starting at %g", l.Min, l.Max, l.Start)
}
