package fanout

import (
	"fmt"
	"strings"
)

// WriteSample is one second of a metawatch variant's fan-out, as its own
// metrics told it (scraped once a second) and as the harness's watch saw it.
type WriteSample struct {
	// Second counts from the fan-out's start.
	Second int `json:"second"`
	// Allowed is metawatch_write_rate: the writes per second the pacer allowed.
	Allowed float64 `json:"allowed"`
	// Written are the pods that came to carry the new value since the
	// sample before (in this second, unless a scrape was missed).
	Written int `json:"written"`
	// BusyWorkers and Workers are controller_runtime_active_workers and
	// controller_runtime_max_concurrent_reconciles of metawatch's busiest
	// controller (in a fan-out, the pods'); Queued is workqueue_depth summed
	// over its controllers.
	BusyWorkers float64 `json:"busyWorkers"`
	Workers     float64 `json:"workers"`
	Queued      float64 `json:"queued"`
	// LatencyBackoffs and ThrottledBackoffs are metawatch_write_backoffs_total
	// by reason, counted from the fan-out's start.
	LatencyBackoffs   float64 `json:"latencyBackoffs"`
	ThrottledBackoffs float64 `json:"throttledBackoffs"`
}

// writeLimits summarises a trace: what held the writes back.
type writeLimits struct {
	seconds                    int
	allowed, written           float64 // means: over the samples, over the seconds
	busyShare                  float64 // samples with every worker busy, over all
	latencyBackoffs, throttled float64
	workers, maxQueued, most   float64
}

func summarise(trace []WriteSample) writeLimits {
	var l writeLimits
	for _, s := range trace {
		l.seconds = max(l.seconds, s.Second)
		l.allowed += s.Allowed
		l.written += float64(s.Written)
		if s.Workers > 0 && s.BusyWorkers >= s.Workers {
			l.busyShare++
		}
		l.workers = max(l.workers, s.Workers)
		l.maxQueued = max(l.maxQueued, s.Queued)
		l.most = max(l.most, s.Allowed)
		l.latencyBackoffs, l.throttled = s.LatencyBackoffs, s.ThrottledBackoffs
	}
	if n := float64(len(trace)); n > 0 {
		l.allowed, l.busyShare = l.allowed/n, l.busyShare/n
		l.written /= float64(l.seconds)
	}
	return l
}

// writeTraceTable is what held each metawatch variant's writes back during
// its fan-out: the rate its pacer allowed against what it wrote, how often
// every worker was busy, and the pacer's decreases by reason.
func writeTraceTable(b *strings.Builder, fanOuts []Result) {
	traced := false
	for _, f := range fanOuts {
		traced = traced || len(f.WriteTrace) > 0
	}
	if !traced {
		return
	}
	b.WriteString("\n### What held metawatch's writes\n\n")
	b.WriteString("Read once a second from each metawatch variant's own metrics during its fan-out. " +
		"Where the rate allowed is well above the pods written and every worker is busy, the workers " +
		"(`--max-concurrent-reconciles`), not the pacer, set the pace; where the two rates meet and the pacer " +
		"backed off, the pacer did.\n\n")
	b.WriteString("| pods | variant | seconds | rate allowed, mean (max) | pods written/s, mean | every worker busy (share of samples) | workers | most queued | backoffs: latency / 429 |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range fanOuts {
		if len(f.WriteTrace) == 0 {
			continue
		}
		l := summarise(f.WriteTrace)
		fmt.Fprintf(b, "| %d | %s | %d | %.0f (%.0f) | %.0f | %.0f%% | %.0f | %.0f | %.0f / %.0f |\n", f.N, f.Variant, l.seconds,
			l.allowed, l.most, l.written, 100*l.busyShare, l.workers, l.maxQueued, l.latencyBackoffs, l.throttled)
	}
	b.WriteString("\n")
}
