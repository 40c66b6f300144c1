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

	mu          sync.Mutex
	state       State
	seen        Observations
	lastTick    time.Time
	pausedUntil time.Time
	served      ServedBy
	// lastWrite is when a write last waited or was answered: the probe
	// goes at ProbeEvery until writingFor after it.
	lastWrite    time.Time
	probeFailing bool
}

// ServedBy is the flow schema and priority level that API Priority and
// Fairness classified the writes into (their uids, which the API server
// sends instead of names).
type ServedBy struct{ FlowSchemaUID, PriorityLevelUID string }

// New is a pacer between limits' floor and ceiling, starting at
// limits.Start (clamped into them), logging its changes of priority level to
// log. probe, if not nil, is the sign of a queue once Start sends it; nil:
// the writes' own latency is.
func New(limits Limits, log logr.Logger, probe Probe) *Pacer {
	law := DefaultLaw(limits.Min, limits.Max)
	s := law.Start(limits.Start)
	p := &Pacer{law: law, state: s, limiter: rate.NewLimiter(rate.Limit(s.Rate), burst(s.Rate)), now: time.Now, log: log, probe: probe}
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
// Retry-After asked for, and a token of the rate. It returns ctx's error if
// ctx ends first, or if its deadline comes before the write could leave.
func (p *Pacer) Wait(ctx context.Context) error {
	if err := p.waitPause(ctx); err != nil {
		return err
	}
	r := p.limiter.Reserve()
	delay := r.Delay()
	if delay == 0 {
		return nil
	}
	p.mu.Lock()
	p.seen.Waited++
	p.lastWrite = p.now()
	p.mu.Unlock()
	if deadline, ok := ctx.Deadline(); ok && p.now().Add(delay).After(deadline) {
		r.Cancel()
		return context.DeadlineExceeded
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

// waitPause sleeps until the pause a 429 asked for is over (several 429s
// may extend it meanwhile).
func (p *Pacer) waitPause(ctx context.Context) error {
	for {
		p.mu.Lock()
		left := p.pausedUntil.Sub(p.now())
		p.mu.Unlock()
		if left <= 0 {
			return nil
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

// Answer is how the API server answered one write.
type Answer struct {
	Latency time.Duration
	// Throttled: 429; RetryAfter is its Retry-After (0: none given).
	Throttled  bool
	RetryAfter time.Duration
	Served     ServedBy
}

// Observe records an answer. A 429 pauses every write for its Retry-After
// and, unless an earlier 429 already paused them, runs the law at once;
// otherwise the law runs once a Tick has passed since it last did.
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
		until := now.Add(cmp.Or(a.RetryAfter, defaultRetryAfter))
		if until.After(p.pausedUntil) {
			p.pausedUntil = until
		}
	}
	if early || now.Sub(p.lastTick) >= Tick {
		p.tick(now)
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
