package firehose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/pprof/profile"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
)

// Setup is what the scenario runs against.
type Setup struct {
	// Measured is the variant, synced: its process, or the chart's pods.
	Measured child.Measured
	// Variant names it in its CPU profile's file.
	Variant string
	Client  client.Client
	// Observer watches the first namespace's pods, which the updates go to.
	Observer *scenario.Observer
	// Updates are the status-only updates: --firehose-rate for --firehose-duration.
	Updates scenario.ChurnOptions
	// Window, where the bill is taken, starts reading the API server over
	// the firehose's window; the function it returns ends it (nil: none).
	Window func() func()
}

// profiler is a measured variant whose process can be CPU-profiled (a child, not the chart's pods).
type profiler interface {
	Profile(path string) (child.Snapshot, error)
	StopProfile() (child.Snapshot, error)
}

// Run is the firehose at n pods: it sends status-only updates to the first namespace's pods at
// --firehose-rate (as many as the API server sustains: requests beyond 64 in
// flight are skipped) for --firehose-duration, always from the harness, and
// records what the variant spent on the events until it was quiet again,
// with a CPU profile of that time where the variant is a process of ours.
//
// With a bill taken, the API server's CPU is read over the same window.
func Run(ctx context.Context, s Setup, n int) (*Result, error) {
	c := s.Measured
	prof, profiled := c.(profiler)
	path := filepath.Join(os.TempDir(), fmt.Sprintf("metawatch-bench-%s-%d.cpu.pprof", s.Variant, n))
	idle, err := idleCPU(ctx, c)
	if err != nil {
		return nil, err
	}
	var before child.Snapshot
	start := time.Now()
	if profiled {
		before, err = prof.Profile(path)
	} else {
		before, err = c.Snapshot()
	}
	if err != nil {
		return nil, err
	}
	opts := s.Updates
	billed := func() {}
	if s.Window != nil {
		billed = s.Window()
	}
	res, err := scenario.Churn(ctx, s.Client, s.Observer, seed.NamespaceName(0), opts)
	if err != nil {
		return nil, fmt.Errorf("firehose: %w", err)
	}
	after, err := child.QuietSnapshot(c)
	if err != nil {
		return nil, err
	}
	billed()
	f := &Result{Seconds: opts.Duration.Seconds(), WindowSeconds: time.Since(start).Seconds(), IdleCPUPerSecond: idle,
		StatusUpdates: res.StatusUpdates, Events: after.Events - before.Events,
		CPUSeconds: after.CPUSeconds - before.CPUSeconds, Mallocs: after.Mallocs - before.Mallocs,
		AllocatedBytes: after.AllocatedBytes - before.AllocatedBytes, GCCycles: after.GCCycles - before.GCCycles,
		ReceivedBytes: probe.PodBytes(after.Bytes) - probe.PodBytes(before.Bytes)}
	if profiled {
		if _, err := prof.StopProfile(); err != nil {
			return nil, err
		}
		if f.TopCPU, err = topFunctions(path, 20); err != nil {
			return nil, err
		}
		_ = os.Remove(path)
	}
	return f, nil
}

// idleWindow is how long idleCPU watches a variant doing nothing.
const idleWindow = 5 * time.Second

// idleCPU is the CPU seconds per second the variant spends with no event to
// handle (timers, the GC, metrics, its Lease): what it would spend over the
// firehose's window without the firehose.
func idleCPU(ctx context.Context, c child.Measured) (float64, error) {
	before, err := c.Snapshot()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := scenario.Sleep(ctx, idleWindow); err != nil {
		return 0, err
	}
	after, err := c.Snapshot()
	return (after.CPUSeconds - before.CPUSeconds) / time.Since(start).Seconds(), err
}

// topFunctions are the n functions of a CPU profile with the most samples of
// their own, with their own and cumulative shares of all samples.
func topFunctions(path string, n int) ([]ProfileLine, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	p, err := profile.Parse(file)
	if err != nil {
		return nil, fmt.Errorf("CPU profile %s: %w", path, err)
	}
	flat, cum := map[string]int64{}, map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[len(s.Value)-1] // cpu nanoseconds
		total += v
		seen := map[string]bool{}
		for i, loc := range s.Location {
			for j, line := range loc.Line {
				name := line.Function.Name
				if i == 0 && j == 0 {
					flat[name] += v
				}
				if !seen[name] {
					cum[name] += v
					seen[name] = true
				}
			}
		}
	}
	names := make([]string, 0, len(flat))
	for name := range flat {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		return flat[names[i]] > flat[names[j]] || flat[names[i]] == flat[names[j]] && names[i] < names[j]
	})
	var out []ProfileLine
	for _, name := range names[:min(n, len(names))] {
		out = append(out, ProfileLine{Function: name, FlatPercent: percent(flat[name], total), CumPercent: percent(cum[name], total)})
	}
	return out, nil
}

func percent(v, total int64) float64 { return 100 * float64(v) / float64(max(total, 1)) }
