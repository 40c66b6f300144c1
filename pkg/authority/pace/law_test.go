package pace

import (
	"math"
	"testing"
	"time"
)

// fast is a tick of quick answers with writes waiting for the rate.
func fast(latency time.Duration) Observations {
	var o Observations
	for range 20 {
		o.Add(latency, false)
	}
	o.Waited = 5
	return o
}

func TestLaw(t *testing.T) {
	law := DefaultLaw(10, 1000)
	settled := State{Rate: 100, Smoothed: 4 * time.Millisecond, Baseline: 3 * time.Millisecond}
	throttled := fast(3 * time.Millisecond)
	throttled.Throttled = 1
	for name, tc := range map[string]struct {
		from     State
		seen     Observations
		want     float64
		decision Decision
	}{
		"a tick that saw nothing changes nothing": {from: settled, want: 100, decision: Held},
		"a 429 halves the rate":                   {from: settled, seen: throttled, want: 50, decision: Throttled},
		"a 429 never takes the rate below the floor": {
			from: State{Rate: 12, Smoothed: time.Millisecond, Baseline: time.Millisecond}, seen: throttled, want: 10, decision: Throttled},
		"answers slower than twice the baseline plus 5ms lower the rate by a fifth": {
			from: settled, seen: fast(40 * time.Millisecond), want: 80, decision: Queued},
		"answers a little slower than the baseline are not a queue": {
			from: settled, seen: fast(6 * time.Millisecond), want: 110, decision: Climbed},
		"fast answers with writes waiting climb by the step": {
			from: settled, seen: fast(3 * time.Millisecond), want: 110, decision: Climbed},
		"in slow start, fast answers double the rate": {
			from: law.Start(50), seen: fast(3 * time.Millisecond), want: 100, decision: Climbed},
		"the rate never climbs above the ceiling": {
			from: State{Rate: 995, Smoothed: 3 * time.Millisecond, Baseline: 3 * time.Millisecond}, seen: fast(3 * time.Millisecond), want: 1000, decision: Climbed},
		"fast answers with no write waiting hold the rate (the rate is not what limits)": {
			from: settled, seen: Observations{Answered: 3, LatencySum: 9 * time.Millisecond}, want: 100, decision: Held},
	} {
		t.Run(name, func(t *testing.T) {
			got, d := law.Next(tc.from, tc.seen)
			if got.Rate != tc.want || d != tc.decision {
				t.Errorf("rate %g after %+v: got %g (%q), want %g (%q)", tc.from.Rate, tc.seen, got.Rate, d, tc.want, tc.decision)
			}
		})
	}
}

func TestSlowStartEndsAtTheFirstDecrease(t *testing.T) {
	law := DefaultLaw(10, 1000)
	s, _ := law.Next(law.Start(50), fast(40*time.Millisecond)) // sets the baseline at 40ms
	s, _ = law.Next(s, fast(200*time.Millisecond))             // queued
	if s.SlowStart {
		t.Fatalf("still in slow start after a decrease: %+v", s)
	}
	before := s.Rate
	s, _ = law.Next(s, fast(40*time.Millisecond))
	s, _ = law.Next(s, fast(40*time.Millisecond))
	if s.Rate > before+2*law.Step {
		t.Errorf("after a decrease the rate climbs by the step: %g then %g", before, s.Rate)
	}
}

func TestSteadyFastAnswersReachTheCeiling(t *testing.T) {
	law := DefaultLaw(10, 1000)
	s := law.Start(50)
	for range 10 {
		s, _ = law.Next(s, fast(3*time.Millisecond))
	}
	if s.Rate != 1000 {
		t.Errorf("after 10 ticks of fast answers with writes waiting, the rate is %g, want the ceiling 1000", s.Rate)
	}
	// Out of slow start too: 99 steps of 10 from the floor.
	s = State{Rate: 10, Smoothed: 3 * time.Millisecond, Baseline: 3 * time.Millisecond}
	for range 99 {
		s, _ = law.Next(s, fast(3*time.Millisecond))
	}
	if s.Rate != 1000 {
		t.Errorf("after 99 steps from the floor the rate is %g, want the ceiling 1000", s.Rate)
	}
}

// FuzzLaw checks the law's promises on any sequence of ticks: the rate
// stays within floor and ceiling, a 429 always lowers it (unless at the
// floor), and a tick that saw nothing changes nothing.
func FuzzLaw(f *testing.F) {
	f.Add(10.0, 1000.0, 50.0, []byte{0, 1, 2, 3, 200, 7})
	f.Add(1.0, 1.0, 5.0, []byte{255, 0, 0})
	f.Add(0.5, 3000.0, 0.0, []byte{9, 9, 9, 9, 9, 9, 9, 9})
	f.Fuzz(func(t *testing.T, floor, ceiling, start float64, ticks []byte) {
		if !(floor > 0) || !(ceiling >= floor) || math.IsInf(ceiling, 0) {
			t.Skip() // Limits.Validate refuses these
		}
		law := DefaultLaw(floor, ceiling)
		s := law.Start(start)
		for i, b := range ticks {
			o := observationsOf(b, ticks, i)
			next, _ := law.Next(s, o)
			if next.Rate < floor || next.Rate > ceiling || math.IsNaN(next.Rate) {
				t.Fatalf("rate %g out of [%g, %g] after %+v", next.Rate, floor, ceiling, o)
			}
			if o.Throttled > 0 && next.Rate >= s.Rate && s.Rate > floor {
				t.Fatalf("a 429 did not lower the rate: %g then %g", s.Rate, next.Rate)
			}
			if again, _ := law.Next(next, Observations{}); again != next {
				t.Fatalf("a tick that saw nothing changed %+v into %+v", next, again)
			}
			s = next
		}
	})
}

// observationsOf makes a tick's observations of byte b: its low bits say
// whether it saw a 429 and whether writes waited, the rest a latency.
func observationsOf(b byte, all []byte, i int) Observations {
	var o Observations
	if b == 0 {
		return o
	}
	latency := time.Duration(b>>2) * time.Millisecond
	for j := range 1 + int(all[(i+1)%len(all)]%8) {
		o.Add(latency+time.Duration(j)*time.Millisecond, false)
	}
	if b&1 != 0 {
		o.Add(0, true)
	}
	if b&2 != 0 {
		o.Waited = 1
	}
	return o
}
