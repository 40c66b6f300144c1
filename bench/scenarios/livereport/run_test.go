package livereport

import (
	"os"
	"testing"
)

// A program started by the harness is measured, not the harness: Go starts
// it with vfork, and Linux's maxrss of such a child counts the parent's
// resident set at exec, so a harness holding 100k pods' figures reported
// that for every report it timed.
func TestTimedMeasuresThePeakOfTheProgramNotOfTheHarness(t *testing.T) {
	held := make([]byte, 300<<20)
	for i := range held {
		held[i] = 1 // resident, not only reserved
	}
	sleep := "/bin/sleep"
	if _, err := os.Stat(sleep); err != nil {
		t.Skipf("no %s here", sleep)
	}
	r, err := timed(t.Context(), []string{sleep, "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakRSSBytes <= 0 || r.PeakRSSBytes > 100<<20 {
		t.Errorf("sleep's peak RSS is %d MiB: want a few MiB, under 100 (the harness holds 300)", r.PeakRSSBytes>>20)
	}
	held[len(held)-1] = held[0] // held until measured
}
