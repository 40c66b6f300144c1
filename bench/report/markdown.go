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
	"github.com/metawatch/metawatch/bench/scenarios/initialsync"
	"github.com/metawatch/metawatch/bench/scenarios/livereport"
	"github.com/metawatch/metawatch/bench/scenarios/relist"
	"github.com/metawatch/metawatch/bench/scenarios/shards"
)

// Markdown renders run as a page: the machine, then one table per question.
func Markdown(run Run) string {
	var b strings.Builder
	header(&b, run)
	initialsync.Table(&b, syncRows(run), run.Baseline, run.largest())
	relist.Table(&b, relistRows(run))
	churn.Table(&b, churnRows(run))
	converge.Table(&b, run.Bare, convergeRows(run))
	fanout.Table(&b, run.FanOuts, run.Options.FanOutIdleSeconds)
	firehose.Table(&b, firehoseRows(run), run.largest())
	bill.Table(&b, billRows(run), run.APIServerAlone)
	scalingTable(&b, run)
	shards.Table(&b, run.Shards)
	initialsync.MemoryTable(&b, memoryRows(run))
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
