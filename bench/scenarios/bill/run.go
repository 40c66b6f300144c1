package bill

import (
	"context"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/probe"
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
func waitQuiet(ctx context.Context, m *probe.APIServer) error {
	deadline := time.Now().Add(quietMax)
	for {
		start, cpu := time.Now(), m.CPUSince()
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

// Setup is what the reference runs against.
type Setup struct {
	// API is the local API server's process.
	API    *probe.APIServer
	Client client.Client
	// Observer watches the first namespace's pods, which the firehose's
	// updates go to.
	Observer *scenario.Observer
	// Updates are the firehose's: the same as the variants'.
	Updates scenario.ChurnOptions
}

// Alone takes the bill's reference at n pods, before any variant runs:
// the local API server's resident set and CPU idle, then under the same
// firehose as the variants with nothing watching but the harness's own
// observer (which watches in every variant's window too). It returns nil,
// saying why, where the API server restarted while it was read: no bill at
// this size.
func Alone(ctx context.Context, s Setup, n int) (*Reference, error) {
	m := s.API
	fmt.Fprintf(os.Stderr, "bench: %d pods: bill: the API server alone, idle for %s, then under the firehose\n", n, billIdle)
	if err := waitQuiet(ctx, m); err != nil {
		return nil, err
	}
	a := Reference{N: n, RSSBytes: m.RSS()}
	start, cpu := time.Now(), m.CPUSince()
	if err := scenario.Sleep(ctx, billIdle); err != nil {
		return nil, err
	}
	idle := cpu()
	if idle == nil {
		lost(n, "idle")
		return nil, nil
	}
	a.IdleCPUPerSecond = *idle / time.Since(start).Seconds()
	start, cpu = time.Now(), m.CPUSince()
	res, err := scenario.Churn(ctx, s.Client, s.Observer, seed.NamespaceName(0), s.Updates)
	if err != nil {
		return nil, fmt.Errorf("firehose with nothing watching: %w", err)
	}
	if err := scenario.Sleep(ctx, billQuiet); err != nil {
		return nil, err
	}
	spent := cpu()
	if spent == nil {
		lost(n, "under the firehose")
		return nil, nil
	}
	a.FirehoseSeconds, a.FirehoseCPUSeconds, a.FirehoseStatusUpdates = time.Since(start).Seconds(), *spent, res.StatusUpdates
	return &a, nil
}

// lost says the bill is given up at n pods: the API server restarted while
// it was read, so a difference of readings would straddle two processes.
func lost(n int, when string) {
	fmt.Fprintf(os.Stderr, "bench: %d pods: bill: the API server restarted while it was read (%s): no bill at this size\n", n, when)
}

// Reading is one variant's share of the API server, taken from just
// before it starts. A reading that finds the API server restarted is lost:
// the variant's other figures stand, without its share.
type Reading struct {
	m     *probe.APIServer
	start time.Time
	cpu   func() *float64
	share Share
	lost  bool
}

// Start waits for a quiet API server m, reads it before a variant starts
// and resets its high-water mark; nil where no bill is taken (m nil).
func Start(ctx context.Context, m *probe.APIServer) (*Reading, error) {
	if m == nil {
		return nil, nil
	}
	if err := waitQuiet(ctx, m); err != nil {
		return nil, err
	}
	if err := m.ResetPeakRSS(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: bill: resetting the API server's peak resident set: %v: no share for this variant\n", err)
		return nil, nil
	}
	return &Reading{m: m, start: time.Now(), cpu: m.CPUSince(), share: Share{RSSBeforeBytes: m.RSS()}}, nil
}

// Settled reads what the variant's start cost the API server: from its
// start until it synced and its first reconciles settled.
func (b *Reading) Settled() {
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
	b.share.StartPeakRSSBytes = max(b.m.PeakRSS(), b.m.RSS(), b.share.RSSBeforeBytes)
}

// Steady reads the API server's resident set after the steady window.
func (b *Reading) Steady() {
	if b != nil {
		b.share.SteadyRSSBytes = b.m.RSS()
	}
}

// Firehose starts reading the API server's CPU under the firehose; the
// function it returns ends the window.
func (b *Reading) Firehose() func() {
	if b == nil {
		return func() {}
	}
	start, cpu := time.Now(), b.m.CPUSince()
	return func() {
		spent := cpu()
		if spent == nil {
			b.lose("under the firehose")
			return
		}
		b.share.FirehoseSeconds, b.share.FirehoseCPUSeconds = time.Since(start).Seconds(), *spent
	}
}

func (b *Reading) lose(when string) {
	fmt.Fprintf(os.Stderr, "bench: bill: the API server restarted while it was read (%s): no share for this variant\n", when)
	b.lost = true
}

// Share is the reading's figures, nil where no bill was taken or it was lost.
func (b *Reading) Share() *Share {
	if b == nil || b.lost {
		return nil
	}
	share := b.share
	return &share
}
