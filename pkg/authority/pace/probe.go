package pace

import (
	"context"
	"sync"
	"time"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Probe is a cheap read of the API server, served through API Priority and
// Fairness as other clients' reads are: its latency is what they feel of
// metawatch's writes, and the law's sign of a queue. It returns nil when the
// server answered (whatever it answered, e.g. 404: the answer took the time
// a read takes), an error when it did not (no evidence).
type Probe func(ctx context.Context) error

// The probe's pace. While writes flow, four probes a tick: the slowest of
// them stands for the high percentile other clients see, at a cost of 4
// small reads a second, next to the tens or hundreds of writes it paces.
// Idle, one every 5 s: the baseline (the lowest answer lately, rising by
// BaselineRise of the gap a tick) stays the idle server's, so that a
// fan-out is judged against the server without it, not against its own
// first second. Writes count as flowing for writingFor after the last.
const (
	ProbeEvery     = 250 * time.Millisecond
	IdleProbeEvery = 5 * time.Second
	writingFor     = 2 * Tick
	// probeTimeout bounds one probe. A probe that takes longer counts as
	// answered at that latency: a server that slow is loaded (and if the
	// connection died instead, lowering the rate is the safe side).
	probeTimeout = 5 * time.Second
)

// Start sends the probe until ctx ends, each at its tick whether or not
// the one before answered (a loaded server must not hide its latency by
// slowing the probe), and returns once the last one has. Without a probe it
// returns at once. A manager.Runnable: app.go adds the pacer to the manager.
func (p *Pacer) Start(ctx context.Context) error {
	if p.probe == nil {
		return nil
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(ProbeEvery)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if !p.probeDue(now, last) {
				continue
			}
			last = now
			wg.Go(func() { p.probeOnce(ctx) })
		}
	}
}

// NeedLeaderElection is false: a standby probes too (every IdleProbeEvery),
// so that it leads with an idle baseline already known.
func (p *Pacer) NeedLeaderElection() bool { return false }

// probeDue reports whether a probe leaves at now, the last one having left at last.
func (p *Pacer) probeDue(now, last time.Time) bool {
	p.mu.Lock()
	writing := now.Sub(p.lastWrite) < writingFor
	p.mu.Unlock()
	return writing || now.Sub(last) >= IdleProbeEvery
}

// probeOnce sends one probe and records its latency, or its failure.
func (p *Pacer) probeOnce(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, probeTimeout)
	defer cancel()
	start := time.Now()
	err := p.probe(ctx)
	latency := time.Since(start)
	switch {
	case err == nil:
	case parent.Err() != nil:
		return // stopping: not an answer
	case ctx.Err() != nil:
		latency = probeTimeout // no answer in time
	default:
		p.probeFailed(err)
		return
	}
	telemetry.WriteProbeSeconds.Observe(latency.Seconds())
	p.observeProbe(latency)
}

// observeProbe records a probe's answer; the law runs if a Tick has passed.
func (p *Pacer) observeProbe(latency time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.probeFailing {
		p.probeFailing = false
		p.log.Info("the write probe answers again: its latency is the sign of a queue")
	}
	p.seen.AddProbe(latency)
	if now := p.now(); now.Sub(p.lastTick) >= Tick {
		p.tick(now)
	}
}

// probeFailed logs the first of a run of failed probes: meanwhile the law
// goes by the writes' own latency (after Law.ProbeGrace ticks).
func (p *Pacer) probeFailed(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.probeFailing {
		p.probeFailing = true
		p.log.Info("warning: the write probe failed; the write rate goes by the writes' own latency until it answers", "error", err.Error())
	}
}
