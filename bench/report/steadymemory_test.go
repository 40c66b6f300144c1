package report

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/scenarios/initialsync"
	"github.com/metawatch/metawatch/bench/scenarios/relist"
	"github.com/metawatch/metawatch/bench/scenarios/shards"
)

func TestSteadyMemoryTableSplitsTheResidentSet(t *testing.T) {
	const mib = 1 << 20
	classes := map[string]uint64{probe.LiveHeapMetric: 300 * mib, probe.HeapObjectsClass: 340 * mib, probe.HeapUnusedClass: 20 * mib,
		probe.HeapFreeClass: 60 * mib, probe.HeapReleasedClass: 100 * mib, probe.HeapStacksClass: 2 * mib, probe.OSStacksClass: 1 * mib,
		probe.TotalClass: 540 * mib}
	for name, tc := range map[string]struct {
		run  Run
		want []string
		none bool
	}{
		"a variant's steady set is split into its parts": {
			run:  Run{Results: []Result{{Variant: "metawatch", N: 1_000_000, SteadyRSSBytes: 480 * mib, SteadyMemory: classes}}},
			want: []string{"| 1000000 | metawatch | 480 | 300 | 40 | 20 | 60 | 3 | 17 | 40 |"},
		},
		"the sync's and the relist's peaks get rows of their own": {
			run: Run{Results: []Result{{Variant: "metawatch", N: 1_000_000, SteadyRSSBytes: 480 * mib, SteadyMemory: classes,
				Sync:   initialsync.Result{PeakSampledRSSBytes: 600 * mib, PeakMemory: classes},
				Relist: &relist.Result{PeakSampledRSSBytes: 590 * mib, PeakMemory: classes}}}},
			want: []string{"| 1000000 | metawatch, at its sync's peak | 600 | 300 | 40 | 20 | 60 | 3 | 17 | 160 |",
				"| 1000000 | metawatch, at its relist's peak | 590 | 300 |"},
		},
		"each shard replica gets a row of its own": {
			run: Run{Shards: []shards.Result{{N: 100, Mode: "server", Replicas: []shards.Replica{
				{CachedPods: 60, SteadyRSS: 480 * mib, SteadyMemory: classes}, {CachedPods: 40, SteadyRSS: 430 * mib, SteadyMemory: classes}}}}},
			want: []string{"| 60 | metawatch, replica 1 of 2 (server) | 480 |", "| 40 | metawatch, replica 2 of 2 (server) | 430 | 300 | 40 | 20 | 60 | 3 | 17 | -10 |"},
		},
		"a run without the runtime's account has no section": {
			run:  Run{Results: []Result{{Variant: "chart", N: 10, SteadyRSSBytes: 480 * mib}}},
			none: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			page := Markdown(tc.run)
			if tc.none && strings.Contains(page, "Where the resident set is") {
				t.Errorf("a section without rows:\n%s", page)
			}
			for _, want := range tc.want {
				if !strings.Contains(page, want) {
					t.Errorf("no row %q in:\n%s", want, page)
				}
			}
		})
	}
}
