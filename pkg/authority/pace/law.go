package pace

import (
	"math"
	"time"
)

// Law is the control law's constants: the operator's floor and ceiling,
// the rest DefaultLaw's.
type Law struct {
	// Floor and Ceiling bound the rate, in writes per second.
	Floor, Ceiling float64
	// OnThrottled multiplies the rate when the API server answered a write
	// with 429 (Priority and Fairness rejected it): it is out of seats for us.
	OnThrottled float64
	// OnQueued multiplies the rate when the API server queues: the smoothed
	// latency is above LatencyFactor times the baseline (the lowest latency
	// seen lately) plus LatencySlack. The latency is the probe's when it
	// answered (what other clients' reads feel), else the writes' own.
	OnQueued      float64
	LatencyFactor float64
	LatencySlack  time.Duration
	// Step is what the rate climbs by in one tick, in writes per second,
	// once the first sign of load was seen; before it the rate doubles
	// each tick (slow start), so a fan-out finds the server's pace in a few
	// seconds rather than a few minutes.
	Step float64
	// BaselineRise is the share of the way the baseline moves up toward a
	// higher tick's mean latency, each tick: the baseline forgets a low
	// that the server no longer gives (other load, a new etcd leader) in
	// tens of ticks, while a lower latency moves it down at once.
	BaselineRise float64
	// ProbeGrace is how many ticks of writes without a probe answer (a
	// failed probe is no evidence) are judged on no latency at all, before
	// the writes' own latency counts again: a probe missed now and then
	// must not hand the verdict to the writes' latency, which rises with
	// their own concurrency.
	ProbeGrace int
}

// DefaultLaw is the law between floor and ceiling: half the rate on a 429,
// 0.8 of it on latency, which is the softer sign; +10 writes/s a tick
// otherwise (after slow start), about the slope at which a fan-out in
// congestion avoidance regains a halving from 200 writes/s in 10 seconds.
// Latency counts as queued past 2x the baseline plus 5 ms: a metadata
// apply answers in a few milliseconds on an idle server, and doubling it
// takes a queue, not noise.
func DefaultLaw(floor, ceiling float64) Law {
	return Law{Floor: floor, Ceiling: ceiling, OnThrottled: 0.5, OnQueued: 0.8, LatencyFactor: 2, LatencySlack: 5 * time.Millisecond,
		Step: 10, BaselineRise: 1.0 / 32, ProbeGrace: 3}
}

// State is what the law carries from one tick to the next. Comparable, so
// that a test can tell whether a tick changed it.
type State struct {
	// Rate is the writes per second allowed now.
	Rate float64
	// SlowStart holds until the first decrease: the rate doubles each tick.
	SlowStart bool
	// Smoothed is the writes' latency, averaged over ticks (each tick's mean
	// weighs half); Baseline the lowest tick mean seen lately: like with
	// like, as a single fast answer among many concurrent ones says nothing
	// of a queue. Zero: no answer yet.
	Smoothed, Baseline time.Duration
	// Probe is the probe's latency, the slowest answer of each tick averaged
	// over ticks as Smoothed is; ProbeBaseline the lowest Probe seen lately:
	// like with like again, and on a server whose answers vary (a busy
	// node) the fastest single answer would be far below what its idle
	// clients see, and make its noise look like a queue. Probed: the probe has answered at least once;
	// until then (no probe, or none that answered) the writes' latency is
	// the signal.
	Probe, ProbeBaseline time.Duration
	Probed               bool
	// ProbeMissed counts the ticks of writes since the probe last answered.
	ProbeMissed int
}

// Start is the state before any write: rate clamped into the law's bounds, in slow start.
func (l Law) Start(rate float64) State {
	return State{Rate: l.clamp(rate), SlowStart: true}
}

// Observations are what the writes of one tick saw.
type Observations struct {
	// Throttled counts the writes answered 429.
	Throttled int
	// Answered counts the other answers; LatencySum is their latencies' sum.
	Answered   int
	LatencySum time.Duration
	// Waited counts the writes that waited for the rate: there was more to
	// write than it allowed, so a higher one would have been used.
	Waited int
	// Probes counts the probe's answers; ProbeMax is the slowest. A tick
	// holds a handful of probes, so the slowest stands for the high
	// percentile of what other clients' reads see.
	Probes   int
	ProbeMax time.Duration
}

// Add records one answer that took latency; throttled for a 429.
func (o *Observations) Add(latency time.Duration, throttled bool) {
	if throttled {
		o.Throttled++
		return
	}
	o.Answered++
	o.LatencySum += latency
}

// AddProbe records one answer of the probe that took latency.
func (o *Observations) AddProbe(latency time.Duration) {
	o.ProbeMax = max(o.ProbeMax, latency)
	o.Probes++
}

// wrote reports whether the tick saw writes: answered, throttled or waiting.
func (o Observations) wrote() bool { return o.Answered > 0 || o.Throttled > 0 || o.Waited > 0 }

// Decision says why Next changed the rate, for the metrics.
type Decision string

// The decisions of a tick.
const (
	Held      Decision = ""          // no change asked for: idle, or nothing new seen
	Throttled Decision = "throttled" // a 429: decreased by OnThrottled
	Queued    Decision = "latency"   // the probe's (or the writes') answers slower than the baseline: decreased by OnQueued
	Climbed   Decision = "climbed"   // answers fast and writes waiting: increased
)

// Next is the state after a tick that saw o, and what it decided. A tick
// that saw nothing changes nothing: the law acts on evidence only, so an
// idle process neither climbs to the ceiling nor falls to the floor; a tick
// of probes alone (idle) keeps the probe's baseline fresh and holds the rate.
func (l Law) Next(s State, o Observations) (State, Decision) {
	if o == (Observations{}) {
		return s, Held
	}
	s = l.observeLatency(s, o)
	s = l.observeProbe(s, o)
	if !o.wrote() {
		return s, Held
	}
	var d Decision
	switch {
	case o.Throttled > 0:
		s.Rate, s.SlowStart, d = s.Rate*l.OnThrottled, false, Throttled
	case l.queued(s, o):
		s.Rate, s.SlowStart, d = s.Rate*l.OnQueued, false, Queued
	case o.Waited > 0 && s.SlowStart:
		s.Rate, d = 2*s.Rate, Climbed
	case o.Waited > 0:
		s.Rate, d = s.Rate+l.Step, Climbed
	}
	s.Rate = l.clamp(s.Rate)
	return s, d
}

// observeLatency folds the tick's answers into the smoothed latency and the baseline.
func (l Law) observeLatency(s State, o Observations) State {
	if o.Answered == 0 {
		return s
	}
	mean := o.LatencySum / time.Duration(o.Answered)
	if s.Smoothed == 0 {
		s.Smoothed, s.Baseline = mean, mean
		return s
	}
	s.Smoothed = (s.Smoothed + mean) / 2
	if mean < s.Baseline {
		s.Baseline = mean
	} else {
		s.Baseline += time.Duration(float64(mean-s.Baseline) * l.BaselineRise)
	}
	return s
}

// observeProbe folds the tick's probe answers into the probe's smoothed
// latency and baseline, as observeLatency does the writes' (idle ticks
// included: the baseline is the idle server's, between fan-outs), and
// counts the ticks of writes it missed.
func (l Law) observeProbe(s State, o Observations) State {
	switch {
	case o.Probes > 0:
		s.ProbeMissed = 0
	case s.Probed && o.wrote():
		s.ProbeMissed++
		return s
	default:
		return s
	}
	if !s.Probed {
		s.Probe, s.ProbeBaseline, s.Probed = o.ProbeMax, o.ProbeMax, true
		return s
	}
	s.Probe = (s.Probe + o.ProbeMax) / 2
	if s.Probe < s.ProbeBaseline {
		s.ProbeBaseline = s.Probe
	} else {
		s.ProbeBaseline += time.Duration(float64(s.Probe-s.ProbeBaseline) * l.BaselineRise)
	}
	return s
}

// queued reports whether the API server queues: the probe's latency, when
// it answered this tick, says what other clients feel; without a probe
// (or one that failed for longer than ProbeGrace) the writes' latency says
// whether they waited.
func (l Law) queued(s State, o Observations) bool {
	switch {
	case o.Probes > 0:
		return l.slow(s.Probe, s.ProbeBaseline)
	case s.Smoothed == 0:
		return false // no answer yet
	case s.Probed && s.ProbeMissed <= l.ProbeGrace:
		return false // no evidence this tick, and the writes' own latency is not the signal
	default:
		return l.slow(s.Smoothed, s.Baseline)
	}
}

// slow reports whether latency is past LatencyFactor times baseline plus LatencySlack.
func (l Law) slow(latency, baseline time.Duration) bool {
	return float64(latency) > l.LatencyFactor*float64(baseline)+float64(l.LatencySlack)
}

// clamp keeps r within floor and ceiling (a NaN, which no input should
// give, becomes the floor: the safe side).
func (l Law) clamp(r float64) float64 {
	if math.IsNaN(r) || r < l.Floor {
		return l.Floor
	}
	return math.Min(r, l.Ceiling)
}
