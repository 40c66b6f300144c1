package report

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plots writes memory.png (retained heap per pod against pods in the cluster,
// one line per variant, log scale) and latency.png (the distribution of
// label-change-to-write latencies per variant at the largest size).
func Plots(dir string, run Run) error {
	if !hasPlots(run) {
		return nil
	}
	if err := memoryPlot(run).Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, "memory.png")); err != nil {
		return fmt.Errorf("memory plot: %w", err)
	}
	if err := latencyPlot(run).Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, "latency.png")); err != nil {
		return fmt.Errorf("latency plot: %w", err)
	}
	return nil
}

// hasPlots reports whether Plots draws anything for run: a log axis of no
// values cannot be drawn, so a run without a sync measured (yet, or a
// fanout-only run) has no plots.
func hasPlots(run Run) bool {
	return slices.ContainsFunc(run.Results, func(r Result) bool { return r.Sync.RetainedBytesPerObject > 0 })
}

func memoryPlot(run Run) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Retained heap per cached pod"
	p.X.Label.Text = "pods in the cluster"
	p.Y.Label.Text = "bytes per pod (log)"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	for i, name := range variantNames(run) {
		var xys plotter.XYs
		for _, r := range run.Results {
			if r.Variant == name && r.Sync.RetainedBytesPerObject > 0 {
				xys = append(xys, plotter.XY{X: float64(r.N), Y: r.Sync.RetainedBytesPerObject})
			}
		}
		addLine(p, name, xys, i)
	}
	return p
}

// latencyPlot is the cumulative distribution of latencies per variant.
func latencyPlot(run Run) *plot.Plot {
	p := plot.New()
	n := run.largest()
	p.Title.Text = fmt.Sprintf("Label change to the rule's write, %d pods, during churn", n)
	p.X.Label.Text = "latency (ms)"
	p.Y.Label.Text = "fraction of label changes"
	p.Legend.Top, p.Legend.Left = false, false
	for i, r := range run.Results {
		if r.N != n || r.Churn == nil || len(r.Churn.LatenciesMillis) == 0 {
			continue
		}
		sorted := slices.Sorted(slices.Values(r.Churn.LatenciesMillis))
		xys := make(plotter.XYs, len(sorted))
		for j, ms := range sorted {
			xys[j] = plotter.XY{X: ms, Y: float64(j+1) / float64(len(sorted))}
		}
		addLine(p, r.Variant, xys, i)
	}
	return p
}

func addLine(p *plot.Plot, name string, xys plotter.XYs, i int) {
	if len(xys) == 0 {
		return
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return
	}
	line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
	line.Dashes, points.Shape = plotutil.Dashes(i%3), plotutil.Shape(i)
	if len(xys) > 50 {
		points.Color = color.Transparent // a distribution: the line is the figure
	}
	p.Add(line, points)
	p.Legend.Add(name, line, points)
}

// variantNames are the run's variants in the order they first appear.
func variantNames(run Run) []string {
	var names []string
	for _, r := range run.Results {
		if !slices.Contains(names, r.Variant) {
			names = append(names, r.Variant)
		}
	}
	return names
}
