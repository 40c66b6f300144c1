package relist

import (
	"fmt"
	"strings"
)

// Result is the relist scenario's figures of one variant: after its sync
// and steady window, the local kube-apiserver was stopped, etcd's revision
// moved on past the variant's last resourceVersion, and the API server
// started again, so that the variant's watch, resumed, was answered 410 Gone
// and it listed every pod again, as a production informer does after an API
// server restart or an etcd compaction.
type Result struct {
	// PeakBeforeRSSBytes is the process's peak resident set before the
	// relist: its sync's (and steady window's).
	PeakBeforeRSSBytes int64 `json:"peakBeforeRSSBytes"`
	// RestartSeconds is from the API server's stop to it ready again.
	RestartSeconds float64 `json:"apiServerRestartSeconds"`
	// Seconds is from the API server ready again to the variant having
	// received every pod again (its events since the restart reached the pods).
	Seconds float64 `json:"seconds"`
	// Events and PodBytes are what the variant received from the restart to
	// the end of the relist: events handed to its informers (or frames, for
	// receive-only) and bytes of pod lists and watches.
	Events   int64 `json:"events"`
	PodBytes int64 `json:"podBytes"`
	// CPUSeconds is the variant's CPU over the same time.
	CPUSeconds float64 `json:"cpuSeconds"`
	// Relists is the relists of the pods the variant counted itself, where
	// it can tell (nil: client-go's informers, which do not say).
	Relists *int64 `json:"relists,omitempty"`
	// PeakRSSBytes is the process's peak resident set from just before the
	// API server's stop to the relist's end (the kernel's high-water mark,
	// reset then), and PeakLiveHeapBytes the most heap a GC found live then.
	PeakRSSBytes      int64  `json:"peakRSSBytes"`
	PeakLiveHeapBytes uint64 `json:"peakLiveHeapBytes,omitempty"`
	// PeakSampledRSSBytes and PeakMemory are as Sync's, for the relist.
	PeakSampledRSSBytes int64             `json:"peakSampledRSSBytes,omitempty"`
	PeakMemory          map[string]uint64 `json:"peakMemoryClasses,omitempty"`
	// SteadyRSSBytes is the resident set after the steady window after the
	// relist, and SteadyMemory the runtime's account of it.
	SteadyRSSBytes int64             `json:"steadyRSSBytes,omitempty"`
	SteadyMemory   map[string]uint64 `json:"steadyMemoryClasses,omitempty"`
}

// receiveOnly is the variant whose sync and relist times the others' are set against.
const receiveOnly = "receive-only"

// Row is one variant's figures at one size the report's section reads:
// its sync's and its relist's (nil where it did not relist).
type Row struct {
	N       int
	Variant string
	// SyncPeakRSSBytes is the initial sync's peak resident set, SteadyRSSBytes
	// the resident set after the steady window, ReadySeconds from the
	// process's start to synced caches.
	SyncPeakRSSBytes, SteadyRSSBytes int64
	ReadySeconds                     float64
	Relist                           *Result
}

// Table is the report's section of the scenario: each variant's relist
// beside its initial sync, peaks and steady resident sets, their ratios
// (the goal is a peak of at most 1.25x the steady set, in both), and the
// times against receive-only's, of every variant of the run (rows).
func Table(b *strings.Builder, all []Row) {
	var rows strings.Builder
	for _, r := range all {
		if l := r.Relist; l != nil {
			relistRow(&rows, all, r, l)
		}
	}
	if rows.Len() == 0 {
		return
	}
	b.WriteString("\n## Initial sync and forced relist: peak and steady\n\n")
	b.WriteString("After each variant's sync and steady window the local kube-apiserver was stopped, etcd's revision moved on past the variant's last " +
		"resourceVersion (keys outside the API's), and the API server started again: the variant's watch, resumed, was answered 410 Gone " +
		"and it listed every pod again, as an informer does after an API server restart or an etcd compaction. A relist is counted only " +
		"once the variant has received every pod again, and at least nine tenths of its sync's bytes of pods. " +
		"Peaks are the kernel's high-water mark of the process's resident set (reset just before the API server's stop, for the relist's); " +
		"steady is the resident set after the steady window idle (after the sync, after the relist); peak / steady is against the steady set before. " +
		"Relisted is from the API server ready again to every pod received, which includes client-go's backoff while it was down. " +
		"Ready and relisted \"vs receive-only\" are against a client that only receives the same stream, in the same run and at the same size.\n\n")
	b.WriteString("| pods | variant | sync peak | steady | sync peak / steady | ready s | ready vs receive-only | relist peak | relist peak / steady | relist peak live heap | after-relist steady | " +
		"restart s | relisted s | relisted vs receive-only | relist CPU s | relist received / pod | relists counted |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	b.WriteString(rows.String())
}

func relistRow(b *strings.Builder, all []Row, r Row, l *Result) {
	readyVs, relistVs := "-", "-"
	if base := find(all, receiveOnly, r.N); base != nil {
		if base.ReadySeconds > 0 && r.ReadySeconds > 0 {
			readyVs = fmt.Sprintf("%.2fx", r.ReadySeconds/base.ReadySeconds)
		}
		if base.Relist != nil && base.Relist.Seconds > 0 {
			relistVs = fmt.Sprintf("%.2fx", l.Seconds/base.Relist.Seconds)
		}
	}
	counted := "-"
	if l.Relists != nil {
		counted = fmt.Sprint(*l.Relists)
	}
	fmt.Fprintf(b, "| %d | %s | %.0f MiB | %s | %s | %s | %s | %.0f MiB | %s | %s | %s | %.1f | %.1f | %s | %.1f | %.0f B | %s |\n",
		r.N, r.Variant, inMiB(r.SyncPeakRSSBytes), orDash(inMiB(r.SteadyRSSBytes), "%.0f MiB"), rssRatio(r.SyncPeakRSSBytes, r.SteadyRSSBytes),
		orDash(r.ReadySeconds, "%.2f"), readyVs, inMiB(l.PeakRSSBytes), rssRatio(l.PeakRSSBytes, r.SteadyRSSBytes),
		orDash(inMiB(int64(l.PeakLiveHeapBytes)), "%.0f MiB"), orDash(inMiB(l.SteadyRSSBytes), "%.0f MiB"),
		l.RestartSeconds, l.Seconds, relistVs, l.CPUSeconds, float64(l.PodBytes)/float64(max(r.N, 1)), counted)
}

// rssRatio is peak over steady, "-" without a steady set.
func rssRatio(peak, steady int64) string {
	if steady <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(peak)/float64(steady))
}

// find is the row of variant at n pods, nil without one.
func find(rows []Row, variant string, n int) *Row {
	for i := range rows {
		if rows[i].Variant == variant && rows[i].N == n {
			return &rows[i]
		}
	}
	return nil
}

// orDash formats v, or "-" where it was not measured (0).
func orDash(v float64, format string) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// inMiB is bytes in MiB.
func inMiB(b int64) float64 { return float64(b) / (1 << 20) }
