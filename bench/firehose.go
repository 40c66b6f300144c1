package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/pprof/profile"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
)

// profiler is a measured variant whose process can be CPU-profiled (a child, not the chart's pods).
type profiler interface {
	Profile(path string) (child.Snapshot, error)
	StopProfile() (child.Snapshot, error)
}

// firehose sends status-only updates to the first namespace's pods at
// --firehose-rate (as many as the API server sustains: requests beyond 64 in
// flight are skipped) for --firehose-duration, always from the harness, and
// records what the variant spent on the events until it was quiet again,
// with a CPU profile of that time where the variant is a process of ours.
//
// With a bill taken, the API server's CPU is read over the same window.
func (h *harness) firehose(ctx context.Context, c child.Measured, r *report.Result, bill *billReading) error {
	prof, profiled := c.(profiler)
	path := filepath.Join(os.TempDir(), fmt.Sprintf("metawatch-bench-%s-%d.cpu.pprof", r.Variant, r.N))
	idle, err := idleCPU(ctx, c)
	if err != nil {
		return err
	}
	var before child.Snapshot
	start := time.Now()
	if profiled {
		before, err = prof.Profile(path)
	} else {
		before, err = c.Snapshot()
	}
	if err != nil {
		return err
	}
	opts := h.firehoseOptions()
	billed := bill.firehose()
	res, err := scenario.Churn(ctx, h.client, h.observer, seed.NamespaceName(0), opts)
	if err != nil {
		return fmt.Errorf("firehose: %w", err)
	}
	after, err := child.QuietSnapshot(c)
	if err != nil {
		return err
	}
	billed()
	f := &report.Firehose{Seconds: opts.Duration.Seconds(), WindowSeconds: time.Since(start).Seconds(), IdleCPUPerSecond: idle,
		StatusUpdates: res.StatusUpdates, Events: after.Events - before.Events,
		CPUSeconds: after.CPUSeconds - before.CPUSeconds, Mallocs: after.Mallocs - before.Mallocs,
		AllocatedBytes: after.AllocatedBytes - before.AllocatedBytes, GCCycles: after.GCCycles - before.GCCycles,
		ReceivedBytes: probe.PodBytes(after.Bytes) - probe.PodBytes(before.Bytes)}
	if profiled {
		if _, err := prof.StopProfile(); err != nil {
			return err
		}
		if f.TopCPU, err = topFunctions(path, 20); err != nil {
			return err
		}
		_ = os.Remove(path)
	}
	r.Firehose = f
	return nil
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

// firehoseOptions are the firehose's status-only updates: the variants'
// and, in the bill, the API server's alone.
func (h *harness) firehoseOptions() scenario.ChurnOptions {
	return scenario.ChurnOptions{StatusPerSecond: h.o.firehoseRate, Duration: h.o.firehoseDuration}
}

// topFunctions are the n functions of a CPU profile with the most samples of
// their own, with their own and cumulative shares of all samples.
func topFunctions(path string, n int) ([]report.ProfileLine, error) {
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
	var out []report.ProfileLine
	for _, name := range names[:min(n, len(names))] {
		out = append(out, report.ProfileLine{Function: name, FlatPercent: percent(flat[name], total), CumPercent: percent(cum[name], total)})
	}
	return out, nil
}

func percent(v, total int64) float64 { return 100 * float64(v) / float64(max(total, 1)) }
