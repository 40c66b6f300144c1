package initialsync

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Result is the initial list and watch: from start to synced caches.
type Result struct {
	Seconds float64 `json:"seconds"`
	// ReadySeconds is from the process's start to synced caches (what the
	// readiness probe waits for): Seconds plus starting up.
	ReadySeconds           float64 `json:"readySeconds,omitempty"`
	CPUSeconds             float64 `json:"cpuSeconds"`
	RetainedBytesPerObject float64 `json:"retainedHeapBytesPerPod"`
	// PeakLiveHeapBytes is the most heap a GC found reachable during the
	// sync: set beside the peak RSS, what of the peak is data held, not GC headroom.
	PeakLiveHeapBytes uint64 `json:"peakLiveHeapBytes,omitempty"`
	// PeakSampledRSSBytes is the most resident set read (every 100 ms) during
	// the sync, and PeakMemory the runtime's account of its memory then.
	PeakSampledRSSBytes     int64             `json:"peakSampledRSSBytes,omitempty"`
	PeakMemory              map[string]uint64 `json:"peakMemoryClasses,omitempty"`
	AllocatedBytesPerObject float64           `json:"allocatedBytesPerPod"`
	ReceivedBytesPerObject  float64           `json:"receivedBytesPerPod"`
	// ReceivedBytesPerObjectByKey splits ReceivedBytesPerObject by "VERB
	// resource media-type" (bench/probe.Key).
	ReceivedBytesPerObjectByKey map[string]float64 `json:"receivedBytesPerPodByKey"`
	Events                      int64              `json:"events"`
	Reconciles                  int64              `json:"reconciles"`
}

// Row is one variant's figures at one size the report's sections read.
type Row struct {
	N       int
	Variant string
	// Objects are the pods it cached.
	Objects int
	// CacheOnly is a cache with no controller, Deployed the chart variant,
	// measured from outside its process (no heap, no wire).
	CacheOnly, Deployed bool
	Sync                Result
	// PeakRSSBytes and CPUSeconds are the whole process's, SyncPeakRSSBytes
	// the sync's peak (before a relist), SteadyRSSBytes the resident set
	// after the steady window.
	PeakRSSBytes, SyncPeakRSSBytes, SteadyRSSBytes int64
	CPUSeconds                                     float64
}

// Table is the report's sections of the sync: every controller variant
// against the baseline at the largest size, each variant's sync (cache-only
// ones in a table of their own), and the bytes received by request.
func Table(b *strings.Builder, rows []Row, baseline string, largest int) {
	summaryTable(b, rows, baseline, largest)
	syncTable(b, rows, baseline, false)
	if slices.ContainsFunc(rows, func(r Row) bool { return r.CacheOnly }) {
		syncTable(b, rows, baseline, true)
	}
	receivedTable(b, rows, largest)
}

// summaryTable is every controller variant against the baseline at the largest size.
func summaryTable(b *strings.Builder, rows []Row, baseline string, n int) {
	base := find(rows, baseline, n)
	if base == nil {
		return
	}
	fmt.Fprintf(b, "\n## Against %s at %d pods (how many times less; > 1 is better)\n\n", baseline, n)
	b.WriteString("| variant | retained heap | allocated in sync | received | peak RSS | CPU seconds (whole run) |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if r.N == n && !r.CacheOnly {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %.1fx | %.1fx |\n", r.Variant,
				times(r, base.Sync.RetainedBytesPerObject, r.Sync.RetainedBytesPerObject), times(r, base.Sync.AllocatedBytesPerObject, r.Sync.AllocatedBytesPerObject),
				times(r, base.Sync.ReceivedBytesPerObject, r.Sync.ReceivedBytesPerObject), float64(base.PeakRSSBytes)/float64(r.PeakRSSBytes), base.CPUSeconds/r.CPUSeconds)
		}
	}
}

func syncTable(b *strings.Builder, rows []Row, baseline string, cacheOnly bool) {
	if cacheOnly {
		b.WriteString("\n## What each memory step saves (cache only, steps added one at a time to stock metadata-only)\n\n")
	} else {
		b.WriteString("\n## Memory, bytes and time of the initial sync\n\n")
	}
	b.WriteString("| pods | variant | cached | retained heap / pod | " + baseline + " / this | allocated in sync / pod | received / pod | sync s | ready s | sync CPU s | peak RSS | steady RSS | CPU s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if r.CacheOnly != cacheOnly && (!cacheOnly || r.Variant != "metadata") {
			continue
		}
		base := find(rows, baseline, r.N)
		fmt.Fprintf(b, "| %d | %s | %d | %s | %s | %s | %s | %.2f | %s | %.2f | %d MiB | %s | %.1f |\n", r.N, r.Variant, r.Objects,
			bytes(r, r.Sync.RetainedBytesPerObject), ratio(base, r), bytes(r, r.Sync.AllocatedBytesPerObject), bytes(r, r.Sync.ReceivedBytesPerObject),
			r.Sync.Seconds, orDash(r.Sync.ReadySeconds, "%.2f"), r.Sync.CPUSeconds, r.SyncPeakRSSBytes>>20, orDash(float64(r.SteadyRSSBytes>>20), "%.0f MiB"), r.CPUSeconds)
	}
}

func ratio(base *Row, r Row) string {
	if base == nil || r.Sync.RetainedBytesPerObject <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", base.Sync.RetainedBytesPerObject/r.Sync.RetainedBytesPerObject)
}

// bytes is a per-pod figure, "-" for the chart variant, which is measured
// from outside its process (no heap, no wire).
func bytes(r Row, perPod float64) string {
	if r.Deployed {
		return "-"
	}
	return fmt.Sprintf("%.0f B", perPod)
}

// orDash formats v, or "-" where it was not measured (0).
func orDash(v float64, format string) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// times is how many times less than the baseline's a figure is, "-" where not measured.
func times(r Row, base, this float64) string {
	if r.Deployed || this <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", base/this)
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

func receivedTable(b *strings.Builder, rows []Row, n int) {
	fmt.Fprintf(b, "\n## Bytes received per cached pod in the initial sync, by request and content type (%d pods)\n\n", n)
	b.WriteString("| variant | request and content type | bytes / pod |\n|---|---|---|\n")
	for _, r := range rows {
		if r.N != n {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(r.Sync.ReceivedBytesPerObjectByKey)) {
			fmt.Fprintf(b, "| %s | `%s` | %.1f |\n", r.Variant, key, r.Sync.ReceivedBytesPerObjectByKey[key])
		}
	}
}
