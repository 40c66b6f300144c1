package report

import (
	"fmt"
	"slices"
	"strings"
)

// projectedPods is the cluster size the scaling table projects to, and
// projectedName its name in the report.
const (
	projectedPods = 1_000_000
	projectedName = "1M"
)

// figure is one per-run figure of a variant that grows with the cluster.
type figure struct {
	name   string
	unit   string
	format string
	of     func(Result) float64 // 0: not measured
}

var scalingFigures = []figure{
	{"sync", "s", "%.1f", func(r Result) float64 { return r.Sync.Seconds }},
	{"ready", "s", "%.1f", func(r Result) float64 { return r.Sync.ReadySeconds }},
	{"sync CPU", "s", "%.1f", func(r Result) float64 { return r.Sync.CPUSeconds }},
	{"peak RSS", "MiB", "%.0f", func(r Result) float64 { return inMiB(r.SyncPeakRSS()) }},
	{"steady RSS", "MiB", "%.0f", func(r Result) float64 { return inMiB(r.SteadyRSSBytes) }},
	{"retained heap", "MiB", "%.0f", func(r Result) float64 {
		return r.Sync.RetainedBytesPerObject * float64(r.Objects) / (1 << 20)
	}},
	{"peak live heap", "MiB", "%.0f", func(r Result) float64 { return inMiB(int64(r.Sync.PeakLiveHeapBytes)) }},
}

func inMiB(b int64) float64 { return float64(b) / (1 << 20) }

// scalingTable projects each variant measured at two sizes or more to
// projectedPods: a straight line fitted to (pods, figure) by least squares.
// A cache's memory grows linearly with what it holds; the fit's intercept is
// what the process costs with nothing cached. The sync's time and CPU grew
// faster than that in bench/results/2026-11-22-300k, where the API server shares the
// machine's two CPUs with the variant, so their projections are floors.
// A run that measured projectedPods itself gets the measured table instead.
func scalingTable(b *strings.Builder, run Run) {
	if run.largest() >= projectedPods {
		measuredScalingTable(b, run)
		return
	}
	var rows []string
	for _, name := range variantNames(run) {
		results := run.resultsOf(name)
		for _, f := range scalingFigures {
			if row, ok := scalingRow(name, f, results); ok {
				rows = append(rows, row)
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Scaling: a line through every size, projected to %s pods\n\n", projectedName)
	b.WriteString("Least-squares fit of each figure against pods cached; measured values in the order of the sizes.\n\n")
	fmt.Fprintf(b, "| variant | figure | measured | per 100k pods | with none | at %s |\n|---|---|---|---|---|---|\n", projectedName)
	b.WriteString(strings.Join(rows, ""))
}

// measuredScalingTable is every figure of every variant at each size measured, nothing projected.
func measuredScalingTable(b *strings.Builder, run Run) {
	sizes := slices.Sorted(slices.Values(run.Options.Sizes))
	var rows strings.Builder
	for _, name := range variantNames(run) {
		byN := map[int]Result{}
		for _, r := range run.resultsOf(name) {
			byN[r.N] = r
		}
		for _, f := range scalingFigures {
			cells, measured := make([]string, len(sizes)), false
			for i, n := range sizes {
				cells[i] = "-"
				if r, ok := byN[n]; ok && f.of(r) > 0 {
					cells[i], measured = fmt.Sprintf(f.format, f.of(r)), true
				}
			}
			if measured {
				fmt.Fprintf(&rows, "| %s | %s (%s) | %s |\n", name, f.name, f.unit, strings.Join(cells, " | "))
			}
		}
	}
	if rows.Len() == 0 {
		return
	}
	b.WriteString("\n## Scaling: measured at every size\n\n")
	header, rule := "| variant | figure |", "|---|---|"
	for _, n := range sizes {
		header, rule = header+fmt.Sprintf(" %s |", podsName(n)), rule+"---:|"
	}
	b.WriteString(header + "\n" + rule + "\n" + rows.String())
}

// podsName is n as the tables name sizes: 10k, 1M.
func podsName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func scalingRow(variant string, f figure, results []Result) (string, bool) {
	var measured []string
	var px, py []float64
	for _, r := range results {
		if v := f.of(r); v > 0 && r.Objects > 0 {
			px, py = append(px, float64(r.Objects)), append(py, v)
			measured = append(measured, fmt.Sprintf(f.format, v))
		}
	}
	if len(px) < 2 {
		return "", false
	}
	slope, intercept := fitLine(px, py)
	return fmt.Sprintf("| %s | %s (%s) | %s | "+f.format+" | "+f.format+" | **"+f.format+"** |\n", variant, f.name, f.unit,
		strings.Join(measured, " / "), slope*100_000, intercept, intercept+slope*projectedPods), true
}

// fitLine is the least-squares line y = slope*x + intercept through the points.
func fitLine(xs, ys []float64) (slope, intercept float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	if d := n*sxx - sx*sx; d != 0 {
		slope = (n*sxy - sx*sy) / d
	}
	return slope, (sy - slope*sx) / n
}

// resultsOf are variant's results, smallest size first.
func (run Run) resultsOf(variant string) []Result {
	var out []Result
	for _, r := range run.Results {
		if r.Variant == variant {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Result) int { return a.N - b.N })
	return out
}
