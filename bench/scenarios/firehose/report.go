package firehose

import (
	"fmt"
	"slices"
	"strings"
)

// Result is a variant under status-only updates at the highest rate the
// API server sustains: what each event costs it.
type Result struct {
	Seconds float64 `json:"seconds"`
	// WindowSeconds is the time CPUSeconds was taken over: the updates,
	// then until the variant was quiet again.
	WindowSeconds float64 `json:"windowSeconds,omitempty"`
	// IdleCPUPerSecond is what the variant spent per second doing nothing,
	// just before (bench's idleCPU).
	IdleCPUPerSecond float64 `json:"idleCPUPerSecond,omitempty"`
	StatusUpdates    int     `json:"statusUpdates"`
	// Events are the watch events the variant received meanwhile (until it
	// was quiet again): delivered to its informers or, in metawatch's
	// variants, left out before decoding as unchanged.
	Events         int64   `json:"events"`
	CPUSeconds     float64 `json:"cpuSeconds"`
	Mallocs        uint64  `json:"mallocs"`
	AllocatedBytes uint64  `json:"allocatedBytes"`
	GCCycles       uint32  `json:"gcCycles"`
	// ReceivedBytes is what the variant received of pods meanwhile (its watches'
	// events; a relist in the window would count too).
	ReceivedBytes int64 `json:"receivedBytes,omitempty"`
	// TopCPU is the CPU profile of that time: the 20 functions with the most
	// samples of their own (none for the chart variant, measured from outside).
	TopCPU []ProfileLine `json:"topCPU,omitempty"`
}

// ProfileLine is one function of a CPU profile: its own share of the samples and its cumulative one.
type ProfileLine struct {
	Function    string  `json:"function"`
	FlatPercent float64 `json:"flatPercent"`
	CumPercent  float64 `json:"cumPercent"`
}

// FirehoseFloor is the variant CPU per event is compared with: a stock
// metadata-only cache and nothing else, the least a stock user can run.
// FirehoseFloorOneP is the same with GOMAXPROCS=1, as the chart runs
// metawatch (a ratio against it, too, when the run has it).
const (
	FirehoseFloor     = "metadata-cache"
	FirehoseFloorOneP = "metadata-cache-gomaxprocs1"
)

// profiledUnderFirehose are the variants whose CPU profile the report shows.
var profiledUnderFirehose = map[string]bool{"metawatch": true, "metawatch-gomaxprocs1": true, FirehoseFloor: true}

// Row is one variant's figures at one size the report's section reads:
// its firehose's (nil where it did not run it).
type Row struct {
	N       int
	Variant string
	// Deployed is the chart variant, measured from outside its process.
	Deployed bool
	Firehose *Result
}

// Table is the report's section of the scenario: every variant's cost per
// event under the firehose, and the CPU profiles of metawatch and the floor
// at the largest size, of every variant of the run (all).
func Table(b *strings.Builder, all []Row, largest int) {
	var rows []Row
	for _, r := range all {
		if r.Firehose != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	floors := []string{FirehoseFloor}
	if slices.ContainsFunc(all, func(r Row) bool { return r.Variant == FirehoseFloorOneP }) {
		floors = append(floors, FirehoseFloorOneP)
	}
	b.WriteString("\n## Firehose: what a status-only event costs\n\n")
	b.WriteString("Status-only updates (a kubelet's condition message) to the first namespace's pods at the highest rate the API server sustained, all variants measured the same way; " +
		"CPU, allocations and GC cycles of the variant's whole process from the first update until it was quiet again, per watch event it received " +
		"(delivered to its informers or, in metawatch's variants, left out before decoding as unchanged: they arrived and were paid for all the same). " +
		"The last columns are CPU per event against `" + strings.Join(floors, "` and `") + "` (a stock metadata-only cache, no controller; with GOMAXPROCS=1, as the chart runs metawatch) at the same size: below 1 is cheaper. " +
		"Idle is what the process spent per second doing nothing in the 5 s before; \"idle out\" takes it, over the same window, out of both sides of the ratio: what the events themselves cost.\n\n")
	b.WriteString("| pods | variant | status updates | events | CPU s / 1000 events | allocations / event | bytes allocated / event | GC cycles | idle CPU ms / s |")
	for _, floor := range floors {
		b.WriteString(" CPU / event vs " + floor + " |")
	}
	b.WriteString(" idle out, vs " + FirehoseFloor + " |")
	b.WriteString("\n|---:|---|---:|---:|---:|---:|---:|---:|---:|" + strings.Repeat("---:|", len(floors)+1) + "\n")
	for _, r := range rows {
		f := r.Firehose
		events := float64(max(f.Events, 1))
		fmt.Fprintf(b, "| %d | %s | %d | %d | %.3f | %s | %s | %s |", r.N, r.Variant, f.StatusUpdates, f.Events, 1000*f.CPUSeconds/events,
			inProcess(r, float64(f.Mallocs)/events, "%.0f"), inProcess(r, float64(f.AllocatedBytes)/events, "%.0f B"), inProcess(r, float64(f.GCCycles), "%.0f"))
		b.WriteString(" " + idleCell(f) + " |")
		for _, name := range floors {
			vs := "-"
			if floor := find(all, name, r.N); floor != nil && floor.Firehose != nil && floor.Firehose.CPUSeconds > 0 {
				vs = fmt.Sprintf("%.2fx", (f.CPUSeconds/events)/(floor.Firehose.CPUSeconds/float64(max(floor.Firehose.Events, 1))))
			}
			b.WriteString(" " + vs + " |")
		}
		b.WriteString(" " + busyRatio(f, find(all, FirehoseFloor, r.N)) + " |\n")
	}
	for _, r := range rows {
		if profiledUnderFirehose[r.Variant] && r.N == largest && len(r.Firehose.TopCPU) > 0 {
			fmt.Fprintf(b, "\n### CPU profile under the firehose: %s, %d pods (top %d by own samples)\n\n| function | flat | cum |\n|---|---:|---:|\n",
				r.Variant, r.N, len(r.Firehose.TopCPU))
			for _, l := range r.Firehose.TopCPU {
				fmt.Fprintf(b, "| `%s` | %.1f%% | %.1f%% |\n", l.Function, l.FlatPercent, l.CumPercent)
			}
		}
	}
}

// inProcess formats a figure read inside the variant's process, "-" for the chart variant (measured from outside: no Go runtime figures).
func inProcess(r Row, v float64, format string) string {
	if r.Deployed {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

func idleCell(f *Result) string {
	if f.WindowSeconds <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", 1000*f.IdleCPUPerSecond)
}

// busyCPUPerEvent is the CPU per event with what the process spends idle
// over the same window taken out; false where the idle pace was not measured.
func (f *Result) busyCPUPerEvent() (float64, bool) {
	if f == nil || f.WindowSeconds <= 0 || f.Events <= 0 {
		return 0, false
	}
	return max(f.CPUSeconds-f.IdleCPUPerSecond*f.WindowSeconds, 0) / float64(f.Events), true
}

// busyRatio is f's busy CPU per event against floor's, "-" where either is not known.
func busyRatio(f *Result, floor *Row) string {
	mine, ok := f.busyCPUPerEvent()
	if !ok || floor == nil {
		return "-"
	}
	theirs, ok := floor.Firehose.busyCPUPerEvent()
	if !ok || theirs <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", mine/theirs)
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
