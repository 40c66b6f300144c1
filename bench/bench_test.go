package main_test

import (
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/scenarios/fanout"
	"github.com/metawatch/metawatch/bench/variant"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }

// The three tests run in parallel: the harness mostly waits (for syncs, for
// quiet, for churn windows), and the kwok and shards runs have control planes
// of their own.

// A tiny run of the whole harness, every variant and scenario but shards
// (TestHarnessShards), so it keeps working: results are produced, complete and
// consistent. One size: a second (the population grown, the figures by size)
// is TestHarnessWithKwokNodes's. No timing or size is asserted: that is what
// the harness itself reports.
func TestHarnessSmoke(t *testing.T) {
	controlplane.SkipIfShort(t)
	t.Parallel()
	run, out := runBench(t, nil, "--kubeconfig", cp.KubeconfigPath, "--sizes", "30", "--pods-per-namespace", "20", "--scenarios", "sync,converge,churn,firehose,report",
		"--churn-duration", "2s", "--churn-status-rate", "10", "--churn-label-rate", "4", "--firehose-duration", "2s", "--firehose-rate", "50", "--steady-window", "1s")
	all := variant.All()
	if len(run.Results) != len(all) {
		t.Fatalf("%d results, want one per variant (%d)", len(run.Results), len(all))
	}
	for _, r := range run.Results {
		t.Run(r.Variant, func(t *testing.T) { checkResult(t, r, true) })
	}
	if len(run.Bare) != 1 || run.Bare[0].Pods != 20 {
		t.Errorf("bare client reference %+v, want one, on the first namespace's 20 pods", run.Bare)
	}
	if l := run.LiveReports; len(l) != 2 || l[0].Tool != "metawatch" || l[1].Tool != "kubectl" || l[0].Seconds <= 0 || l[0].PeakRSSBytes <= 0 || l[1].PeakRSSBytes <= 0 {
		t.Errorf("live reports %+v, want metawatch's and kubectl's, timed and measured", l)
	}
	checkReport(t, out, all)
}

// The fanout scenario alone, on a control plane of its own (its bench
// namespaces would meet the smoke test's): no --variants run, and every one
// of its own fans out every pod of both namespaces, in order, with the
// probes measured idle and during. The API server is reached by kubeconfig,
// so its CPU is not read, and the report says so.
func TestHarnessFanOut(t *testing.T) {
	controlplane.SkipIfShort(t)
	t.Parallel()
	own := ownControlPlane(t)
	run, out := runBench(t, nil, "--kubeconfig", own.KubeconfigPath, "--sizes", "40", "--pods-per-namespace", "20", "--scenarios", "fanout", "--fanout-idle", "1s")
	if len(run.Results) != 0 {
		t.Errorf("%d variant results, want none: the fan-out's variants are its own", len(run.Results))
	}
	var names []string
	for _, f := range run.FanOuts {
		names = append(names, f.Variant)
		if f.N != 40 || f.Namespaces != 2 || f.Pods != 40 || f.Seconds <= 0 || f.PeakWritesPerSecond <= 0 {
			t.Errorf("%s: %+v, want every pod of both namespaces relabelled, timed", f.Variant, f)
		}
		for probe, p := range map[string]fanout.ProbeLatency{"GET": f.ProbeGet, "patch": f.OtherWriter} {
			if p.Idle.Requests == 0 || p.During.Requests == 0 || p.Idle.Errors+p.During.Errors > 0 || p.Idle.P99Millis <= 0 || p.During.P99Millis <= 0 {
				t.Errorf("%s: probe %s %+v, want requests idle and during, without errors", f.Variant, probe, p)
			}
		}
		if f.APIServerCPUSeconds != nil {
			t.Errorf("%s: the API server's CPU is %g s, want none read: it is not the local control plane", f.Variant, *f.APIServerCPUSeconds)
		}
		checkWriteTrace(t, f)
	}
	if strings.Join(names, ",") != "metawatch,metawatch-bare-workers,metawatch-qps50,bare" {
		t.Errorf("fan-outs of %v, want metawatch, metawatch-bare-workers, metawatch-qps50 and bare, in that order", names)
	}
	if f := run.FanOuts; len(f) == 4 {
		if f[0].Flags != nil {
			t.Errorf("metawatch ran with %v, want its defaults", f[0].Flags)
		}
		if want := []string{"--max-concurrent-reconciles=16"}; !slices.Equal(f[1].Flags, want) {
			t.Errorf("metawatch-bare-workers ran with %v, want %v: the bare client's 16 workers", f[1].Flags, want)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Fan-out", "| 40 | bare |", "on this target it was not measured", "### What held metawatch's writes"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}

// checkWriteTrace: a metawatch variant's fan-out carries its own metrics
// second by second, its workers and the rate it allowed read; the bare
// client's carries none.
func checkWriteTrace(t *testing.T, f fanout.Result) {
	t.Helper()
	if f.Variant == fanout.Bare {
		if len(f.WriteTrace) > 0 {
			t.Errorf("bare: a write trace of %d seconds, want none: it is not metawatch", len(f.WriteTrace))
		}
		return
	}
	written := 0
	for _, s := range f.WriteTrace {
		written += s.Written
		if s.Workers == 0 || s.Allowed == 0 {
			t.Errorf("%s: second %d %+v, want its workers and the rate allowed read from metawatch's metrics", f.Variant, s.Second, s)
		}
	}
	if len(f.WriteTrace) == 0 || written != f.Pods {
		t.Errorf("%s: a write trace of %d seconds writing %d pods, want at least one second and the %d pods relabelled", f.Variant, len(f.WriteTrace), written, f.Pods)
	}
}

// With simulated nodes (kwok), on a control plane of its own, at two sizes:
// the pods are bound to them and made Running by kwok, the churn's status
// updates come from kwok, the harness's watch sees them, and the report says
// who sent them; the population grows from the first size to the second, and
// each size has its figures.
func TestHarnessWithKwokNodes(t *testing.T) {
	controlplane.SkipIfShort(t)
	t.Parallel()
	own := ownControlPlane(t)
	run, out := runBench(t, nil, "--kubeconfig", own.KubeconfigPath, "--kwok-nodes", "2", "--sizes", "20,40", "--pods-per-namespace", "20",
		"--variants", "typed,metawatch", "--churn-duration", "4s", "--churn-status-rate", "10", "--churn-label-rate", "2", "--steady-window", "1s")
	if run.Options.KwokNodes != 2 || len(run.Results) != 4 {
		t.Fatalf("options %+v and %d results, want 2 simulated nodes and a result per variant (2) and size (2)", run.Options, len(run.Results))
	}
	if len(run.Bare) != 2 || run.Bare[0].N != 20 || run.Bare[1].N != 40 {
		t.Errorf("bare client reference %+v, want one per size (20, 40)", run.Bare)
	}
	for _, r := range run.Results {
		t.Run(fmt.Sprintf("%s/%d", r.Variant, r.N), func(t *testing.T) {
			checkResult(t, r, false)
			if c := r.Churn; c.StatusBy != "kwok" || c.StatusUpdates == 0 {
				t.Errorf("churn status updates %d by %q, want some, seen from kwok", c.StatusUpdates, c.StatusBy)
			}
		})
	}
	if page, err := os.ReadFile(filepath.Join(out, "README.md")); err != nil || !strings.Contains(string(page), "(kwok)") {
		t.Errorf("the report does not say kwok sent the status updates (%v)", err)
	}
}

// runBench builds and runs the harness with args (and env, if not nil) into
// a directory of its own, and returns its results and that directory.
// ownControlPlane is a control plane for t alone, stopped when t ends.
func ownControlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	own, err := controlplane.Start(t.Context(), controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	return own
}

// withoutKubeconfig is this process's environment without $KUBECONFIG: a
// harness run with it starts a local control plane of its own.
func withoutKubeconfig() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") })
}

func runBench(t *testing.T, env []string, args ...string) (report.Run, string) {
	t.Helper()
	bin, remove, err := testkit.Build(".", "bench")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	out := t.TempDir()
	cmd := exec.Command(bin, append(args, "--out", out)...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v", err)
	}
	return readRun(t, filepath.Join(out, "results.json")), out
}

func readRun(t *testing.T, path string) report.Run {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var run report.Run
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return run
}

// checkResult checks a variant's result; the firehose's only if the run had it.
func checkResult(t *testing.T, r report.Result, firehose bool) {
	if r.Objects != r.N || r.Sync.ReceivedBytesPerObject <= 0 || r.Sync.AllocatedBytesPerObject <= 0 || r.Sync.Seconds <= 0 ||
		r.PeakRSSBytes <= 0 || r.CPUSeconds <= 0 || r.Sync.Events < int64(r.N) {
		t.Errorf("incomplete or inconsistent sync: %+v (want all %d pods cached, each an event, and positive figures)", r.Sync, r.N)
	}
	if r.Sync.ReadySeconds < r.Sync.Seconds || r.SteadyRSSBytes <= 0 || r.SteadyRSSBytes > r.PeakRSSBytes {
		t.Errorf("ready after %.2f s for a sync of %.2f s, steady RSS %d B of peak %d B: want ready no sooner than synced, and a steady RSS within the peak",
			r.Sync.ReadySeconds, r.Sync.Seconds, r.SteadyRSSBytes, r.PeakRSSBytes)
	}
	if r.Variant != "typed" {
		for key := range r.Sync.ReceivedBytesPerObjectByKey {
			if strings.Contains(key, " pods ") && strings.Contains(key, "json") {
				t.Errorf("a metadata variant received JSON for pods: %q", key)
			}
		}
	}
	if f := r.Firehose; firehose && (f == nil || f.StatusUpdates == 0 || f.Events < int64(f.StatusUpdates)/2 || f.CPUSeconds <= 0 || f.Mallocs == 0 ||
		f.WindowSeconds < f.Seconds || f.IdleCPUPerSecond < 0) {
		t.Errorf("firehose %+v, want status updates sent, most of them delivered as events, the CPU and allocations they cost, "+
			"over a window no shorter than the updates, and the idle pace before", f)
	}
	if r.Sync.PeakLiveHeapBytes == 0 || r.SteadyMemory[probe.LiveHeapMetric] == 0 || r.SteadyMemory[probe.TotalClass] < r.SteadyMemory[probe.LiveHeapMetric] {
		t.Errorf("peak live heap %d B, steady memory classes %v: want the most live heap during the sync and the runtime's account of the steady set",
			r.Sync.PeakLiveHeapBytes, r.SteadyMemory)
	}
	if r.CacheOnly {
		return
	}
	if c := r.Converge; c == nil || c.Pods != 20 || c.Activity.Writes < 20 {
		t.Errorf("converge %+v, want the first namespace's 20 pods relabelled, each a write", c)
	}
	c := r.Churn
	if c == nil || c.LabelChanges == 0 || c.Missed != 0 || len(c.LatenciesMillis) != c.LabelChanges || c.Activity.Writes < int64(c.LabelChanges) {
		t.Fatalf("churn %+v, want every label change put back by a write, each with a latency", c)
	}
	if c.Activity.Events < int64(c.StatusUpdates+c.LabelChanges) || c.Activity.Reconciles == 0 {
		t.Errorf("churn activity %+v for %d status updates and %d label changes", c.Activity, c.StatusUpdates, c.LabelChanges)
	}
}

func checkReport(t *testing.T, dir string, all []variant.Variant) {
	page, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range all {
		if !strings.Contains(string(page), "| "+v.Name+" |") {
			t.Errorf("README.md has no row for %s", v.Name)
		}
	}
	for _, name := range []string{"memory.png", "latency.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 100 {
			t.Errorf("%s is not a plot: %v", name, err)
		}
	}
}
