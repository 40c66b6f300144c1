package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/metawatch/metawatch/bench/scenarios/bill"
	"github.com/metawatch/metawatch/bench/scenarios/churn"
	"github.com/metawatch/metawatch/bench/scenarios/converge"
	"github.com/metawatch/metawatch/bench/scenarios/failover"
	"github.com/metawatch/metawatch/bench/scenarios/fanout"
	"github.com/metawatch/metawatch/bench/scenarios/firehose"
	"github.com/metawatch/metawatch/bench/scenarios/livereport"
	"github.com/metawatch/metawatch/bench/scenarios/relist"
	"github.com/metawatch/metawatch/bench/scenarios/shards"
)

// Markdown renders run as a page: the machine, then one table per question.
func Markdown(run Run) string {
	var b strings.Builder
	header(&b, run)
	summaryTable(&b, run)
	syncTable(&b, run, false)
	if slices.ContainsFunc(run.Results, func(r Result) bool { return r.CacheOnly }) {
		syncTable(&b, run, true)
	}
	receivedTable(&b, run)
	relist.Table(&b, relistRows(run))
	churn.Table(&b, churnRows(run))
	converge.Table(&b, run.Bare, convergeRows(run))
	fanout.Table(&b, run.FanOuts, run.Options.FanOutIdleSeconds)
	firehose.Table(&b, firehoseRows(run), run.largest())
	bill.Table(&b, billRows(run), run.APIServerAlone)
	scalingTable(&b, run)
	shards.Table(&b, run.Shards)
	steadyMemoryTable(&b, run)
	livereport.Table(&b, run.LiveReports, run.Options.ReportKubectlMaxPods)
	failover.Table(&b, run.Failovers)
	controlPlaneTable(&b, run)
	if hasPlots(run) {
		b.WriteString("\n![retained heap per cached pod against pods in the cluster](memory.png)\n\n![label change to write latency](latency.png)\n")
	}
	return dropEmptySections(b.String())
}

// dropEmptySections removes each "## " section whose tables have no row: a
// scenario that did not run, or a variant that was not in it, leaves no
// header over nothing.
func dropEmptySections(page string) string {
	parts := strings.Split(page, "\n## ")
	kept := parts[:1]
	for _, section := range parts[1:] {
		if !emptyTables(section) {
			kept = append(kept, section)
		}
	}
	return strings.Join(kept, "\n## ")
}

// emptyTables reports whether section has a table and none of its tables has a row.
func emptyTables(section string) bool {
	lines := strings.Split(section, "\n")
	tables, rows := 0, 0
	for i, line := range lines {
		if !strings.HasPrefix(line, "|-") && !strings.HasPrefix(line, "|:-") {
			continue
		}
		tables++
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|") {
			rows++
		}
	}
	return tables > 0 && rows == 0
}

func header(b *strings.Builder, run Run) {
	m, o := run.Machine, run.Options
	fmt.Fprintf(b, "# metawatch bench results\n\n")
	fmt.Fprintf(b, "Measured %s on %s/%s, %d CPUs (%s), %.0f GiB memory, %s, kube-apiserver %s on %s.\n",
		m.Date, m.OS, m.Arch, m.CPUs, m.CPU, float64(m.MemoryBytes)/(1<<30), m.GoVersion, m.KubernetesVersion, m.Target)
	fmt.Fprintf(b, "Sizes %v pods (%d per namespace), scenarios %s, concurrency %d",
		o.Sizes, o.PerNamespace, strings.Join(o.Scenarios, ","), o.Concurrency)
	fanOutOnly := len(run.Results) == 0 && len(run.FanOuts) > 0 // the variants' own figures were not taken
	if fanOutOnly {
		b.WriteString(". ")
	} else {
		fmt.Fprintf(b, "; churn %.0f status updates/s and %.0f label changes/s for %.0f s. ", o.ChurnStatusPerSec, o.ChurnLabelsPerSec, o.ChurnSeconds)
	}
	if o.SteadySeconds > 0 && !fanOutOnly {
		fmt.Fprintf(b, "Steady RSS is each variant's resident set after %.0f s idle after its sync. ", o.SteadySeconds)
	}
	if o.LeanPods {
		b.WriteString("Pods were lean (`--lean-pods`): the same metadata, one bare container instead of a production-shaped spec. ")
	}
	if o.KwokNodes > 0 {
		fmt.Fprintf(b, "Pods ran on %d simulated nodes (kwok): kwok made them Running and sent the churn's status updates. ", o.KwokNodes)
	}
	for _, name := range slices.Sorted(maps.Keys(o.VariantMaxPods)) {
		fmt.Fprintf(b, "`%s` ran only at sizes up to %d pods (`--variant-max-pods`). ", name, o.VariantMaxPods[name])
	}
	baseline := run.Baseline
	if fanOutOnly {
		baseline = fanout.Bare
	}
	fmt.Fprintf(b, "Every variant ran in its own process against the same API server in the same run; ratios are against `%s`, measured in the same run. "+
		"Variants and scenarios are described in %s.\n\n", baseline, guideLink(run.guide))
	if o.Command != "" {
		fmt.Fprintf(b, "Run again with `%s`.\n\n", o.Command)
	}
}

// guideLink links the bench's README.md from the page, or names it where the
// page is outside the repository.
func guideLink(path string) string {
	if path == "" {
		return "bench/README.md"
	}
	return fmt.Sprintf("[bench/README.md](%s)", path)
}

// summaryTable is every controller variant against the baseline at the largest size.
func summaryTable(b *strings.Builder, run Run) {
	n := run.largest()
	base := run.find(run.Baseline, n)
	if base == nil {
		return
	}
	fmt.Fprintf(b, "\n## Against %s at %d pods (how many times less; > 1 is better)\n\n", run.Baseline, n)
	b.WriteString("| variant | retained heap | allocated in sync | received | peak RSS | CPU seconds (whole run) |\n|---|---|---|---|---|---|\n")
	for _, r := range run.Results {
		if r.N == n && !r.CacheOnly {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %.1fx | %.1fx |\n", r.Variant,
				times(r, base.Sync.RetainedBytesPerObject, r.Sync.RetainedBytesPerObject), times(r, base.Sync.AllocatedBytesPerObject, r.Sync.AllocatedBytesPerObject),
				times(r, base.Sync.ReceivedBytesPerObject, r.Sync.ReceivedBytesPerObject), float64(base.PeakRSSBytes)/float64(r.PeakRSSBytes), base.CPUSeconds/r.CPUSeconds)
		}
	}
}

func syncTable(b *strings.Builder, run Run, cacheOnly bool) {
	if cacheOnly {
		b.WriteString("\n## What each memory step saves (cache only, steps added one at a time to stock metadata-only)\n\n")
	} else {
		b.WriteString("\n## Memory, bytes and time of the initial sync\n\n")
	}
	b.WriteString("| pods | variant | cached | retained heap / pod | " + run.Baseline + " / this | allocated in sync / pod | received / pod | sync s | ready s | sync CPU s | peak RSS | steady RSS | CPU s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range run.Results {
		if r.CacheOnly != cacheOnly && (!cacheOnly || r.Variant != "metadata") {
			continue
		}
		base := run.find(run.Baseline, r.N)
		fmt.Fprintf(b, "| %d | %s | %d | %s | %s | %s | %s | %.2f | %s | %.2f | %d MiB | %s | %.1f |\n", r.N, r.Variant, r.Objects,
			bytes(r, r.Sync.RetainedBytesPerObject), ratio(base, r), bytes(r, r.Sync.AllocatedBytesPerObject), bytes(r, r.Sync.ReceivedBytesPerObject),
			r.Sync.Seconds, orDash(r.Sync.ReadySeconds, "%.2f"), r.Sync.CPUSeconds, r.SyncPeakRSS()>>20, orDash(float64(r.SteadyRSSBytes>>20), "%.0f MiB"), r.CPUSeconds)
	}
}

func ratio(base *Result, r Result) string {
	if base == nil || r.Sync.RetainedBytesPerObject <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", base.Sync.RetainedBytesPerObject/r.Sync.RetainedBytesPerObject)
}

// bytes is a per-pod figure, "-" for the chart variant, which is measured
// from outside its process (no heap, no wire).
func bytes(r Result, perPod float64) string {
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
func times(r Result, base, this float64) string {
	if r.Deployed || this <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", base/this)
}

func (run Run) find(variant string, n int) *Result {
	for i := range run.Results {
		if run.Results[i].Variant == variant && run.Results[i].N == n {
			return &run.Results[i]
		}
	}
	return nil
}

func receivedTable(b *strings.Builder, run Run) {
	n := run.largest()
	fmt.Fprintf(b, "\n## Bytes received per cached pod in the initial sync, by request and content type (%d pods)\n\n", n)
	b.WriteString("| variant | request and content type | bytes / pod |\n|---|---|---|\n")
	for _, r := range run.Results {
		if r.N != n {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(r.Sync.ReceivedBytesPerObjectByKey)) {
			fmt.Fprintf(b, "| %s | `%s` | %.1f |\n", r.Variant, key, r.Sync.ReceivedBytesPerObjectByKey[key])
		}
	}
}
