package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
)

// The bill's windows: the API server is quiet once a window of quietWindow
// shows it below quietCPU cores (after a seeding, a million-pod API server
// collects its garbage for minutes), waited for at most quietMax; then the
// idle reference, and after the firehose with nothing watching, the time
// its last events take to go out (a variant's firehose window ends once
// the variant is quiet, a second or more after the updates).
const (
	quietCPU    = 0.25
	quietWindow = 5 * time.Second
	quietMax    = 5 * time.Minute
	billIdle    = 10 * time.Second
	billQuiet   = 2 * time.Second
)

// waitQuiet waits until the API server spends less than quietCPU cores
// over a quietWindow, for up to quietMax (then it says so and goes on: the
// figures are taken, over a busier server).
func (m *apiServerMeter) waitQuiet(ctx context.Context) error {
	deadline := time.Now().Add(quietMax)
	for {
		start, cpu := time.Now(), m.cpuSince()
		if err := scenario.Sleep(ctx, quietWindow); err != nil {
			return err
		}
		spent := cpu()
		if spent == nil {
			return nil // restarted: the next reading says so
		}
		rate := *spent / time.Since(start).Seconds()
		if rate < quietCPU {
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "bench: bill: the API server still spends %.2f cores after %s: measured as it is\n", rate, quietMax)
			return nil
		}
	}
}

// billAlone takes the bill's reference at n pods, before any variant runs:
// the local API server's resident set and CPU idle, then under the same
// firehose as the variants with nothing watching but the harness's own
// observer (which watches in every variant's window too). It leaves
// h.billMeter set for the variants, nil (and the bill not taken, saying
// why) where the API server is not the local control plane's.
func (h *harness) billAlone(ctx context.Context, n int) error {
	if h.billMeter == nil || !h.billMeter.same() { // the same process keeps the peak it had before
		h.billMeter = h.apiServerMeter("bill")
	}
	if h.billMeter == nil {
		fmt.Fprintf(os.Stderr, "bench: %d pods: bill: the API server is not the local control plane's: the bill is not taken\n", n)
		return nil
	}
	fmt.Fprintf(os.Stderr, "bench: %d pods: bill: the API server alone, idle for %s, then under the firehose\n", n, billIdle)
	if err := h.billMeter.waitQuiet(ctx); err != nil {
		return err
	}
	a := report.APIServerAlone{N: n, RSSBytes: h.billMeter.rss()}
	start, cpu := time.Now(), h.billMeter.cpuSince()
	if err := scenario.Sleep(ctx, billIdle); err != nil {
		return err
	}
	idle := cpu()
	if idle == nil {
		return h.billLost(n, "idle")
	}
	a.IdleCPUPerSecond = *idle / time.Since(start).Seconds()
	start, cpu = time.Now(), h.billMeter.cpuSince()
	res, err := scenario.Churn(ctx, h.client, h.observer, seed.NamespaceName(0), h.firehoseOptions())
	if err != nil {
		return fmt.Errorf("firehose with nothing watching: %w", err)
	}
	if err := scenario.Sleep(ctx, billQuiet); err != nil {
		return err
	}
	spent := cpu()
	if spent == nil {
		return h.billLost(n, "under the firehose")
	}
	a.FirehoseSeconds, a.FirehoseCPUSeconds, a.FirehoseStatusUpdates = time.Since(start).Seconds(), *spent, res.StatusUpdates
	h.run.APIServerAlone = append(h.run.APIServerAlone, a)
	return nil
}

// billLost gives up the bill at n pods: the API server restarted while it
// was read, so a difference of readings would straddle two processes.
func (h *harness) billLost(n int, when string) error {
	fmt.Fprintf(os.Stderr, "bench: %d pods: bill: the API server restarted while it was read (%s): no bill at this size\n", n, when)
	h.billMeter = nil
	return nil
}

// billReading is one variant's share of the API server, taken from just
// before it starts. A reading that finds the API server restarted is lost:
// the variant's other figures stand, without its share.
type billReading struct {
	m     *apiServerMeter
	start time.Time
	cpu   func() *float64
	share report.APIServerShare
	lost  bool
}

// startBill waits for a quiet API server, reads it before a variant
// starts and resets its high-water mark; nil where no bill is taken.
func (h *harness) startBill(ctx context.Context) (*billReading, error) {
	m := h.billMeter
	if m == nil {
		return nil, nil
	}
	if err := m.waitQuiet(ctx); err != nil {
		return nil, err
	}
	if err := m.resetPeakRSS(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: bill: resetting the API server's peak resident set: %v: no share for this variant\n", err)
		return nil, nil
	}
	return &billReading{m: m, start: time.Now(), cpu: m.cpuSince(), share: report.APIServerShare{RSSBeforeBytes: m.rss()}}, nil
}

// settled reads what the variant's start cost the API server: from its
// start until it synced and its first reconciles settled.
func (b *billReading) settled() {
	if b == nil {
		return
	}
	spent := b.cpu()
	if spent == nil {
		b.lose("in its start")
		return
	}
	b.share.StartSeconds, b.share.StartCPUSeconds = time.Since(b.start).Seconds(), *spent
	// The high-water mark trails the resident set by a few pages.
	b.share.StartPeakRSSBytes = max(b.m.peakRSS(), b.m.rss(), b.share.RSSBeforeBytes)
}

// steady reads the API server's resident set after the steady window.
func (b *billReading) steady() {
	if b != nil {
		b.share.SteadyRSSBytes = b.m.rss()
	}
}

// firehose starts reading the API server's CPU under the firehose; the
// function it returns ends the window.
func (b *billReading) firehose() func() {
	if b == nil {
		return func() {}
	}
	start, cpu := time.Now(), b.m.cpuSince()
	return func() {
		spent := cpu()
		if spent == nil {
			b.lose("under the firehose")
			return
		}
		b.share.FirehoseSeconds, b.share.FirehoseCPUSeconds = time.Since(start).Seconds(), *spent
	}
}

func (b *billReading) lose(when string) {
	fmt.Fprintf(os.Stderr, "bench: bill: the API server restarted while it was read (%s): no share for this variant\n", when)
	b.lost = true
}

// into puts the reading into r, unless it was lost.
func (b *billReading) into(r *report.Result) {
	if b != nil && !b.lost {
		share := b.share
		r.APIServer = &share
	}
}
