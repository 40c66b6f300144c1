package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// The relist scenario on a local control plane the harness starts itself
// (it restarts its API server), at 40 pods: every variant, the stock
// informers' included, lists every pod again after the restart, receive-only
// opens its watch again instead of stopping, the variants that count their
// relists counted one, and the report sets each relist beside its sync. No
// size or time is asserted: that is what the harness reports.
func TestHarnessRelist(t *testing.T) {
	controlplane.SkipIfShort(t)
	t.Parallel()
	variants := []string{"metawatch", "metawatch-stock-informer", "metadata-cache", "receive-only"}
	run, out := runBench(t, withoutKubeconfig(), "--sizes", "40", "--pods-per-namespace", "20", "--scenarios", "sync,relist",
		"--variants", strings.Join(variants, ","), "--steady-window", "1s")
	if len(run.Results) != len(variants) {
		t.Fatalf("%d results, want one per variant (%d)", len(run.Results), len(variants))
	}
	for _, r := range run.Results {
		t.Run(r.Variant, func(t *testing.T) { checkRelist(t, r) })
	}
	page, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Initial sync and forced relist", "| 40 | metawatch-stock-informer |", "metawatch, after its relist"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}

func checkRelist(t *testing.T, r report.Result) {
	t.Helper()
	l := r.Relist
	if l == nil {
		t.Fatal("no relist")
	}
	if l.Events < int64(r.N) || l.PodBytes <= 0 || l.RestartSeconds <= 0 || l.Seconds < 0 || l.CPUSeconds <= 0 {
		t.Errorf("relist %+v, want every one of the %d pods received again, in bytes of pods, after a restart, timed", l, r.N)
	}
	if l.PeakRSSBytes <= 0 || l.PeakLiveHeapBytes == 0 || l.SteadyRSSBytes <= 0 || l.SteadyMemory[probe.LiveHeapMetric] == 0 {
		t.Errorf("relist peak %d B (live heap %d B), steady after %d B: want all measured", l.PeakRSSBytes, l.PeakLiveHeapBytes, l.SteadyRSSBytes)
	}
	if l.PeakBeforeRSSBytes <= 0 || r.SyncPeakRSS() != l.PeakBeforeRSSBytes || r.PeakRSSBytes < max(l.PeakBeforeRSSBytes, l.PeakRSSBytes) {
		t.Errorf("sync peak %d B, relist peak %d B, whole run's %d B: want the sync's kept apart and the whole run's the most",
			l.PeakBeforeRSSBytes, l.PeakRSSBytes, r.PeakRSSBytes)
	}
	countsItself := r.Variant == "metawatch" || r.Variant == "receive-only"
	switch {
	case countsItself && (l.Relists == nil || *l.Relists < 1):
		t.Errorf("relists counted %v, want at least one by the variant's own account", l.Relists)
	case !countsItself && l.Relists != nil:
		t.Errorf("relists counted %d, want none: client-go's informers do not say", *l.Relists)
	}
}
