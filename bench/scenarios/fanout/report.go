package fanout

import (
	"fmt"
	"strings"

	"github.com/metawatch/metawatch/bench/stats"
)

// Result is one variant's fan-out at one size: every bench Namespace
// relabelled until every pod carries the new value, with two probe clients
// on the same API server.
type Result struct {
	N       int    `json:"n"`
	Variant string `json:"variant"`
	// Flags are the metawatch flags the variant ran with beside its
	// configuration file and addresses (none: its defaults, or the bare client).
	Flags      []string `json:"flags,omitempty"`
	Namespaces int      `json:"namespaces"`
	// Pods are the pods that came to carry the new value.
	Pods    int     `json:"pods"`
	Seconds float64 `json:"seconds"`
	// PeakWritesPerSecond is the most pods that came to carry the new value
	// within any one second, as the harness's watch saw them.
	PeakWritesPerSecond float64 `json:"peakWritesPerSecond"`
	// ProbeGet is a client's GET of one pod every 100 ms; OtherWriter another
	// client's merge patch of a ConfigMap's annotation every 200 ms.
	ProbeGet    ProbeLatency `json:"probeGet"`
	OtherWriter ProbeLatency `json:"otherWriterPatch"`
	// APIServerCPUSeconds is the API server's user and system CPU during the
	// fan-out; nil where it was not measured (it is not a process of this
	// machine the harness can read: any target but the local control plane).
	APIServerCPUSeconds *float64 `json:"apiServerCPUSeconds,omitempty"`
	// WriteTrace is a metawatch variant's fan-out second by second, from
	// its own metrics; none for the bare client.
	WriteTrace []WriteSample `json:"writeTrace,omitempty"`
}

// WritesPerSecond is the pods relabelled over the seconds it took.
func (f Result) WritesPerSecond() float64 { return float64(f.Pods) / max(f.Seconds, 1e-9) }

// ProbeLatency is a probe's latencies idle, just before the fan-out (the
// variant running, nothing to write), and during it.
type ProbeLatency struct {
	Idle   ProbeWindow `json:"idle"`
	During ProbeWindow `json:"during"`
}

// ProbeWindow summarises one probe's requests over one window.
type ProbeWindow struct {
	Requests  int     `json:"requests"`
	Errors    int     `json:"errors"`
	P50Millis float64 `json:"p50Millis"`
	P99Millis float64 `json:"p99Millis"`
	MaxMillis float64 `json:"maxMillis"`
}

// NewProbeWindow summarises latencies (milliseconds), errors of them.
func NewProbeWindow(millis []float64, errors int) ProbeWindow {
	w := ProbeWindow{Requests: len(millis), Errors: errors, P50Millis: stats.Percentile(millis, 50), P99Millis: stats.Percentile(millis, 99)}
	for _, m := range millis {
		w.MaxMillis = max(w.MaxMillis, m)
	}
	return w
}

// Table is the report's section of the scenario: per size, each variant
// against the bare client's time, and what the fan-out did to the probes
// (idle for idleSeconds before it); then what held metawatch's writes.
func Table(b *strings.Builder, fanOuts []Result, idleSeconds float64) {
	if len(fanOuts) == 0 {
		return
	}
	b.WriteString("\n## Fan-out: every bench Namespace relabelled until every pod carries the new value\n\n")
	fmt.Fprintf(b, "Goal: the fan-out within 1.25x of the bare client's time while the probe's GET p99 stays within 2x of its idle value. "+
		"A probe client GETs one pod every 100 ms and another writer merge-patches an annotation of a ConfigMap every 200 ms, each on a connection of its own; "+
		"idle is the %.0f s just before the fan-out, with the variant running and nothing to write. "+
		"writes/s is pods over seconds, the most in any one second in parentheses. Variants ran in this order at each size, each from every pod carrying the value before.\n\n",
		idleSeconds)
	b.WriteString("| pods | variant | seconds to converge | writes/s | probe GET p99 (idle → during) | other writer's patch p99 (idle → during) | API server CPU s | time vs bare |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range fanOuts {
		fmt.Fprintf(b, "| %d | %s | %.1f | %.0f (%.0f) | %s | %s | %s | %s |\n", f.N, f.Variant, f.Seconds, f.WritesPerSecond(), f.PeakWritesPerSecond,
			idleToDuring(f.ProbeGet), idleToDuring(f.OtherWriter), cpuSeconds(f.APIServerCPUSeconds), againstBare(fanOuts, f))
	}
	b.WriteString("\n")
	for _, f := range fanOuts {
		if f.N == fanOuts[0].N {
			fmt.Fprintf(b, "- `%s`: %s\n", f.Variant, flagsOf(f))
		}
	}
	if !hasAPIServerCPU(fanOuts) {
		b.WriteString("\nThe API server's CPU is read from its process on the local control plane only; on this target it was not measured.\n")
	}
	writeTraceTable(b, fanOuts)
}

// idleToDuring is a probe's p99 idle and during the fan-out, and how many
// times the idle one that is; errors, if any, after.
func idleToDuring(p ProbeLatency) string {
	s := fmt.Sprintf("%.1f → %.1f ms", p.Idle.P99Millis, p.During.P99Millis)
	if p.Idle.P99Millis > 0 {
		s += fmt.Sprintf(" (%.1fx)", p.During.P99Millis/p.Idle.P99Millis)
	}
	if errs := p.Idle.Errors + p.During.Errors; errs > 0 {
		s += fmt.Sprintf(", %d errors", errs)
	}
	return s
}

func cpuSeconds(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *s)
}

// againstBare is f's time over the bare client's at the same size, "-"
// where the bare client did not run.
func againstBare(all []Result, f Result) string {
	for _, bare := range all {
		if bare.Variant == Bare && bare.N == f.N && bare.Seconds > 0 {
			return fmt.Sprintf("%.2fx", f.Seconds/bare.Seconds)
		}
	}
	return "-"
}

// Bare is the name of the fan-out's bare-client variant.
const Bare = "bare"

func flagsOf(f Result) string {
	switch {
	case f.Variant == Bare:
		return "the harness applying the same labels itself with `--concurrency` workers, no rate limit"
	case len(f.Flags) == 0:
		return "the metawatch binary with its default flags"
	default:
		return "the metawatch binary with `" + strings.Join(f.Flags, " ") + "`"
	}
}

func hasAPIServerCPU(all []Result) bool {
	for _, f := range all {
		if f.APIServerCPUSeconds != nil {
			return true
		}
	}
	return false
}
