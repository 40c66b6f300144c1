package pace

import (
	"cmp"
	"context"
	"math"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Tick is how often the law runs while writes are answered; a 429 runs it at once.
const Tick = time.Second

// defaultRetryAfter is the pause after a 429 without a Retry-After header
// (the API server always sends one; a proxy in between may not).
const defaultRetryAfter = time.Second

// Pacer is the process's write rate: every write waits for it (Wait), and
// tells it how the API server answered (Observe). Safe for concurrent use.
type Pacer struct {
	law     Law
	limiter *rate.Limiter
	now     func() time.Time
	log     logr.Logger
	probe   Probe

	// retryAfterMax caps every pause a 429 asks for (--write-retry-after-max).
	retryAfterMax time.Duration

	mu          sync.Mutex
	state       State
	seen        Observations
	lastTick    time.Time
	pausedUntil time.Time
	// pauseAsked is the Retry-After the 429 that set pausedUntil asked
	// for, before the cap (0: it gave none): what a write refused for the
	// pause is told.
	pauseAsked time.Duration
	served     ServedBy
	// lastWrite is when a write last waited or was answered: the probe
	// goes at ProbeEvery until writingFor after it.
	lastWrite    time.Time
	probeFailing bool
}

// ServedBy is the flow schema and priority level that API Priority and
// Fairness classified the writes into (their uids, which the API server
// sends instead of names).
type ServedBy struct{ FlowSchemaUID, PriorityLevelUID string }

// New is a pacer between bounds' floor and ceiling, starting at
// bounds.Start (clamped into them), pausing for a 429 at most
// bounds.RetryAfterMax, logging its changes of priority level to log.
// probe, if not nil, is the sign of a queue once Start sends it; nil: the
// writes' own latency is.
func New(bounds RateBounds, log logr.Logger, probe Probe) *Pacer {
	law := DefaultLaw(bounds.Min, bounds.Max)
	s := law.Start(bounds.Start)
	p := &Pacer{law: law, state: s, limiter: rate.NewLimiter(rate.Limit(s.Rate), burst(s.Rate)), now: time.Now, log: log, probe: probe,
		retryAfterMax: bounds.retryAfterMax()}
	p.lastTick = p.now()
	telemetry.WriteRate.Set(s.Rate)
	return p
}

// burst lets about a tenth of a second's writes leave together: the writes
// of several workers released at once, not a second's worth in one go.
func burst(r float64) int { return max(1, int(math.Ceil(r/10))) }

// Rate is the writes per second allowed now.
func (p *Pacer) Rate() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.Rate
}

// Served is the flow schema and priority level of the last answered write ("" before one).
func (p *Pacer) Served() ServedBy {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// Wait returns when a write may be sent: after any pause a 429's
// Retry-After asked for (at most the cap), and a token of the rate. It
// returns ctx's error if ctx ends first, and at once a *WaitError if the
// pause or the rate would hold the write past ctx's deadline: waiting for
// it would only hold a worker until the write fails anyway.
func (p *Pacer) Wait(ctx context.Context) error {
	if err := p.waitPause(ctx); err != nil {
		return err
	}
	return p.waitRate(ctx)
}

// waitPause sleeps until the pause a 429 asked for is over (several 429s
// may extend it meanwhile), or fails at once if it would end after ctx's
// deadline.
func (p *Pacer) waitPause(ctx context.Context) error {
	for {
		left, err := p.pauseLeft(ctx)
		if err != nil || left <= 0 {
			return err
		}
		t := time.NewTimer(left)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// pauseLeft is how long a write of ctx must still wait for the pause, or
// the error saying why it is not sent if the pause ends after ctx's
// deadline.
func (p *Pacer) pauseLeft(ctx context.Context) (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	left := p.pausedUntil.Sub(now)
	if left <= 0 {
		return 0, nil
	}
	if deadline, ok := ctx.Deadline(); ok && p.pausedUntil.After(deadline) {
		return 0, &WaitError{Wait: left, Deadline: deadline.Sub(now), Pause: &Pause{Asked: p.pauseAsked, Max: p.retryAfterMax}}
	}
	return left, nil
}

// waitRate waits for a token of the rate, or fails at once if the token
// comes after ctx's deadline (giving it back, for the writes behind).
func (p *Pacer) waitRate(ctx context.Context) error {
	now := p.now()
	r := p.limiter.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	if delay == 0 {
		return nil
	}
	p.mu.Lock()
	p.seen.Waited++
	p.lastWrite = now
	writesPerSecond := p.state.Rate
	p.mu.Unlock()
	if deadline, ok := ctx.Deadline(); ok && now.Add(delay).After(deadline) {
		r.CancelAt(now)
		return &WaitError{Wait: delay, Deadline: deadline.Sub(now), Rate: writesPerSecond}
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}

// Answer is how the API server answered one write.
type Answer struct {
	Latency time.Duration
	// Throttled: 429; RetryAfter is its Retry-After (0: none given).
	Throttled  bool
	RetryAfter time.Duration
	Served     ServedBy
}

// Observe records an answer. A 429 pauses every write for its Retry-After
// (at most the cap) and, unless an earlier 429 already paused them, runs
// the law at once; otherwise the law runs once a Tick has passed since it
// last did.
func (p *Pacer) Observe(a Answer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.lastWrite = now
	p.seen.Add(a.Latency, a.Throttled)
	p.noteServed(a.Served)
	early := false
	if a.Throttled {
		telemetry.WritesThrottled.Inc()
		early = !now.Before(p.pausedUntil) // the first 429 of a pause
		p.pause(now, a.RetryAfter, early)
	}
	if early || now.Sub(p.lastTick) >= Tick {
		p.tick(now)
	}
}

// pause holds every write for the pause a 429 asked for (asked; 0: it gave
// no Retry-After, defaultRetryAfter), cut to the cap: a Retry-After of an
// hour, from a server or a proxy, would otherwise stop every write for the
// hour. first: the 429 began this pause. Called with mu held.
func (p *Pacer) pause(now time.Time, asked time.Duration, first bool) {
	// Logged once a pause, by its first 429 asking for more than the cap.
	if asked > p.retryAfterMax && (first || p.pauseAsked <= p.retryAfterMax) {
		p.log.Info("a 429's Retry-After asked writes to pause longer than --write-retry-after-max allows: they pause for that instead",
			"retryAfter", asked.String(), "pause", p.retryAfterMax.String())
	}
	until := now.Add(min(cmp.Or(asked, defaultRetryAfter), p.retryAfterMax))
	if until.After(p.pausedUntil) {
		p.pausedUntil, p.pauseAsked = until, asked
	}
}

// tick runs the law on what was seen since the last tick. Called with mu held.
func (p *Pacer) tick(now time.Time) {
	next, d := p.law.Next(p.state, p.seen)
	p.seen, p.lastTick = Observations{}, now
	if d == Throttled || d == Queued {
		telemetry.WriteBackoffs.WithLabelValues(string(d)).Inc()
	}
	if next.Rate != p.state.Rate {
		p.limiter.SetLimitAt(now, rate.Limit(next.Rate))
		p.limiter.SetBurstAt(now, burst(next.Rate))
		telemetry.WriteRate.Set(next.Rate)
		p.log.V(1).Info("write rate changed", "from", p.state.Rate, "to", next.Rate, "why", string(d),
			"smoothedLatency", next.Smoothed.String(), "baselineLatency", next.Baseline.String(),
			"probeLatency", next.Probe.String(), "probeBaselineLatency", next.ProbeBaseline.String())
	}
	p.state = next
}

// noteServed publishes the priority level that served the writes, and
// logs it when it changes (at start, or after the operator's FlowSchema was
// applied or removed). Called with mu held.
func (p *Pacer) noteServed(s ServedBy) {
	if s == (ServedBy{}) || s == p.served {
		return
	}
	p.served = s
	telemetry.WritePriorityLevel.Reset()
	telemetry.WritePriorityLevel.WithLabelValues(s.FlowSchemaUID, s.PriorityLevelUID).Set(1)
	p.log.Info("writes are served by an API Priority and Fairness priority level (uids: kubectl get flowschemas,prioritylevelconfigurations -o custom-columns=NAME:.metadata.name,UID:.metadata.uid)",
		"flowSchemaUID", s.FlowSchemaUID, "priorityLevelUID", s.PriorityLevelUID)
}
