package report

import (
	"math"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/scenarios/initialsync"
	"github.com/metawatch/metawatch/bench/scenarios/livereport"
)

func TestFitLine(t *testing.T) {
	for name, c := range map[string]struct {
		xs, ys           []float64
		slope, intercept float64
	}{
		"two points give the line through them":      {[]float64{50_000, 100_000}, []float64{60, 110}, 0.001, 10},
		"points on a line give that line":            {[]float64{50_000, 100_000, 300_000}, []float64{70, 120, 320}, 0.001, 20},
		"points off a line give the least squares":   {[]float64{0, 1, 2}, []float64{0, 2, 1}, 0.5, 0.5},
		"one size measured twice gives a flat line":  {[]float64{5, 5}, []float64{1, 3}, 0, 2},
		"a figure that does not grow gives no slope": {[]float64{10, 20, 30}, []float64{7, 7, 7}, 0, 7},
	} {
		t.Run(name, func(t *testing.T) {
			slope, intercept := fitLine(c.xs, c.ys)
			if !near(slope, c.slope) || !near(intercept, c.intercept) {
				t.Errorf("fitLine = %g x + %g, want %g x + %g", slope, intercept, c.slope, c.intercept)
			}
		})
	}
}

// Points taken from any line, at any distinct sizes, give back that line.
func FuzzFitLineRecoversALine(f *testing.F) {
	f.Add(0.0005, 40.0, 50_000.0, 100_000.0, 300_000.0)
	f.Fuzz(func(t *testing.T, slope, intercept, x1, x2, x3 float64) {
		xs := []float64{x1, x2, x3}
		for _, x := range xs {
			if math.IsNaN(x) || math.Abs(x) > 1e7 || math.Abs(slope) > 1e3 || math.Abs(intercept) > 1e6 || math.IsNaN(slope) || math.IsNaN(intercept) {
				t.Skip("outside what a bench measures")
			}
		}
		if math.Abs(x1-x2) < 1 || math.Abs(x2-x3) < 1 || math.Abs(x1-x3) < 1 {
			t.Skip("sizes must differ")
		}
		ys := []float64{slope*x1 + intercept, slope*x2 + intercept, slope*x3 + intercept}
		gotSlope, gotIntercept := fitLine(xs, ys)
		for i, x := range xs {
			if got := gotSlope*x + gotIntercept; math.Abs(got-ys[i]) > 1e-6*(1+math.Abs(ys[i])) {
				t.Fatalf("the fit gives %g at %g, the line %g", got, x, ys[i])
			}
		}
	})
}

func TestScalingTableProjectsEveryMeasuredFigure(t *testing.T) {
	result := func(n int, steadyMiB int64) Result {
		return Result{Variant: "metawatch", N: n, Objects: n, SteadyRSSBytes: steadyMiB << 20,
			Sync: initialsync.Result{Seconds: float64(n) / 20_000, RetainedBytesPerObject: 500}}
	}
	run := Run{Results: []Result{result(50_000, 60), result(100_000, 85), result(300_000, 185)}}
	var b strings.Builder
	scalingTable(&b, run)
	for _, want := range []string{
		"| metawatch | sync (s) | 2.5 / 5.0 / 15.0 | 5.0 | 0.0 | **50.0** |",
		"| metawatch | steady RSS (MiB) | 60 / 85 / 185 | 50 | 35 | **535** |",
		"| metawatch | retained heap (MiB) | 24 / 48 / 143 | 48 | 0 | **477** |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table has no row %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "peak RSS") || strings.Contains(b.String(), "ready") || strings.Contains(b.String(), "sync CPU") {
		t.Errorf("figures not measured have rows:\n%s", b.String())
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*(1+math.Abs(b)) }

// A run that measured a million pods gets what it measured at each size, no projection.
func TestScalingTableOfAMillionIsMeasured(t *testing.T) {
	result := func(variant string, n int, steadyMiB int64) Result {
		return Result{Variant: variant, N: n, Objects: n, SteadyRSSBytes: steadyMiB << 20, Sync: initialsync.Result{PeakLiveHeapBytes: uint64(steadyMiB) << 21}}
	}
	run := Run{Options: Options{Sizes: []int{10_000, 1_000_000, 300_000}},
		Results: []Result{result("metawatch", 10_000, 60), result("metawatch", 300_000, 185), result("metawatch", 1_000_000, 480), result("metadata-cache", 10_000, 70)}}
	var b strings.Builder
	scalingTable(&b, run)
	for _, want := range []string{
		"| variant | figure | 10k | 300k | 1M |",
		"| metawatch | steady RSS (MiB) | 60 | 185 | 480 |",
		"| metadata-cache | steady RSS (MiB) | 70 | - | - |",
		"| metawatch | peak live heap (MiB) | 120 | 370 | 960 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table has no row %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "projected") {
		t.Errorf("a measured million is projected:\n%s", b.String())
	}
}

// A page has no section whose table is empty: scenarios that did not run
// leave nothing, the ones that ran keep theirs.
func TestEmptySectionsAreLeftOut(t *testing.T) {
	page := Markdown(Run{Baseline: "metawatch", Options: Options{Sizes: []int{10_000}},
		LiveReports: []livereport.Result{{Pods: 10_000, Tool: "metawatch", Seconds: 2}}})
	for _, gone := range []string{"## Churn", "## Converge", "## Memory, bytes and time", "## Bytes received"} {
		if strings.Contains(page, gone) {
			t.Errorf("the page has an empty section %q:\n%s", gone, page)
		}
	}
	if !strings.Contains(page, "## Live report") || !strings.Contains(page, "| 10000 | metawatch |") {
		t.Errorf("the live report's section is gone too:\n%s", page)
	}
}
