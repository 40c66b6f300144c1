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

// probed is o with n probe answers of latency each.
func probed(o Observations, latency time.Duration) Observations {
	for range 4 {
		o.AddProbe(latency)
	}
	return o
}

func TestLaw(t *testing.T) {
	law := DefaultLaw(10, 1000)
	settled := State{Rate: 100, Smoothed: 4 * time.Millisecond, Baseline: 3 * time.Millisecond}
	throttled := fast(3 * time.Millisecond)
	throttled.Throttled = 1
	// A probe answering in 2ms, the writes (their own concurrency) in 4.
	withProbe := settled
	withProbe.Probe, withProbe.ProbeBaseline, withProbe.Probed = 2*time.Millisecond, 2*time.Millisecond, true
	probeSilent := withProbe
	probeSilent.ProbeMissed = law.ProbeGrace
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
		"with the probe fast, writes slowed by their own concurrency climb": {
			from: withProbe, seen: probed(fast(40*time.Millisecond), 2*time.Millisecond), want: 110, decision: Climbed},
		"a probe slower than twice its baseline plus 5ms lowers the rate though the writes are fast": {
			from: withProbe, seen: probed(fast(3*time.Millisecond), 40*time.Millisecond), want: 80, decision: Queued},
		"a probe a little slower than its baseline is not a queue": {
			from: withProbe, seen: probed(fast(40*time.Millisecond), 6*time.Millisecond), want: 110, decision: Climbed},
		"a 429 halves the rate though the probe is fast": {
			from: withProbe, seen: probed(throttled, 2*time.Millisecond), want: 50, decision: Throttled},
		"a tick of slow writes and no probe answer is no evidence of a queue": {
			from: withProbe, seen: fast(40 * time.Millisecond), want: 110, decision: Climbed},
		"a probe silent for longer than ProbeGrace ticks hands the verdict back to the writes' latency": {
			from: probeSilent, seen: fast(40 * time.Millisecond), want: 80, decision: Queued},
		"a tick of probes alone (idle) holds the rate": {
			from: withProbe, seen: probed(Observations{}, 40*time.Millisecond), want: 100, decision: Held},
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

// serverOf is a server whose writes answer later the more of them are in
// flight (Little's law: 3ms at 50 writes/s, in proportion to the rate) while it queues
// no one else: its probe answers in 2ms whatever the rate. It answers 429
// past its capacity.
func serverOf(rate float64, probe bool) Observations {
	const capacity = 600
	o := fast(time.Duration(rate/50*3) * time.Millisecond)
	if rate > capacity {
		o.Throttled = 1
	}
	if probe {
		o = probed(o, 2*time.Millisecond)
	}
	return o
}

func TestAFastProbeLetsTheRateClimbPastTheWritesOwnLatency(t *testing.T) {
	law := DefaultLaw(10, 1000)
	without, withoutQueued, withoutFull := run(law, false)
	with, withQueued, withFull := run(law, true)
	if withoutQueued == 0 {
		t.Fatalf("without a probe the writes' own latency never lowered the rate (%g): the model no longer shows the problem", without)
	}
	if withQueued > 0 {
		t.Errorf("with a probe answering in 2ms, the writes' own latency lowered the rate %d times (ending at %g)", withQueued, with)
	}
	if withFull >= withoutFull {
		t.Errorf("with a probe the rate reached the server's capacity at tick %d, without at tick %d: want sooner with it", withFull, withoutFull)
	}
}

// run is 60 ticks of law on serverOf from a start at 50 writes/s: the
// rate it ends at, how many times latency lowered it, and the tick of the
// first 429 (60: none).
func run(law Law, probe bool) (rate float64, queued, full int) {
	s, full := law.Start(50), 60
	for i := range 60 {
		o := serverOf(s.Rate, probe)
		if o.Throttled > 0 {
			full = min(full, i)
		}
		var d Decision
		if s, d = law.Next(s, o); d == Queued {
			queued++
		}
	}
	return s.Rate, queued, full
}

func TestIdleProbesKeepTheBaselineFresh(t *testing.T) {
	law := DefaultLaw(10, 1000)
	s, _ := law.Next(law.Start(50), probed(fast(3*time.Millisecond), 30*time.Millisecond)) // a busy server
	rate := s.Rate
	for range 5 {
		s, _ = law.Next(s, probed(Observations{}, 2*time.Millisecond))
	}
	if s.ProbeBaseline >= 3*time.Millisecond || s.Rate != rate {
		t.Errorf("after 5 idle ticks of probes of 2ms: baseline %v and rate %g, want below 3ms (back from 30) and the rate unchanged (%g)", s.ProbeBaseline, s.Rate, rate)
	}
}

// FuzzLaw checks the law's promises on any sequence of ticks: the rate
// stays within floor and ceiling, a 429 always lowers it (unless at the
// floor), a tick that saw nothing changes nothing, a tick of probes alone
// holds the rate, and while the probe answers, the writes' own latency
// never changes the decision.
func FuzzLaw(f *testing.F) {
	f.Add(10.0, 1000.0, 50.0, []byte{0, 1, 2, 3, 200, 7})
	f.Add(1.0, 1.0, 5.0, []byte{255, 0, 0})
	f.Add(0.5, 3000.0, 0.0, []byte{9, 9, 9, 9, 9, 9, 9, 9})
	f.Fuzz(func(t *testing.T, floor, ceiling, start float64, ticks []byte) {
		if !(floor > 0) || !(ceiling >= floor) || math.IsInf(ceiling, 0) {
			t.Skip() // RateBounds.Validate refuses these
		}
		law := DefaultLaw(floor, ceiling)
		s := law.Start(start)
		for i, b := range ticks {
			o := observationsOf(b, ticks, i)
			next, decision := law.Next(s, o)
			if next.Rate < floor || next.Rate > ceiling || math.IsNaN(next.Rate) {
				t.Fatalf("rate %g out of [%g, %g] after %+v", next.Rate, floor, ceiling, o)
			}
			if o.Throttled > 0 && next.Rate >= s.Rate && s.Rate > floor {
				t.Fatalf("a 429 did not lower the rate: %g then %g", s.Rate, next.Rate)
			}
			if again, _ := law.Next(next, Observations{}); again != next {
				t.Fatalf("a tick that saw nothing changed %+v into %+v", next, again)
			}
			if idle, _ := law.Next(next, Observations{Probes: o.Probes, ProbeMax: o.ProbeMax}); idle.Rate != next.Rate {
				t.Fatalf("a tick of probes alone changed the rate from %g to %g", next.Rate, idle.Rate)
			}
			if o.Probes > 0 {
				other := o
				other.LatencySum = 7 * o.LatencySum
				if _, d := law.Next(s, other); d != decision {
					t.Fatalf("with the probe answering, the writes' latency changed the decision: %q at %v, %q at 7x", decision, o.LatencySum, d)
				}
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
	// The probe answers in some ticks, at a latency of its own.
	if next := all[(i+1)%len(all)]; next&8 != 0 {
		o.AddProbe(time.Duration(next>>4) * time.Millisecond)
		o.AddProbe(time.Duration(next>>3) * time.Millisecond)
	}
	return o
}
