package report

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/scenarios/initialsync"
	"github.com/metawatch/metawatch/bench/scenarios/relist"
)

func TestRelistTableSetsTheRelistBesideTheSync(t *testing.T) {
	const mib = 1 << 20
	one := int64(1)
	relisted := func(variant string, ready, relistSeconds float64, peakBefore, peak, steady, after int64, counted *int64) Result {
		return Result{Variant: variant, N: 100_000, Objects: 100_000, Sync: initialsync.Result{ReadySeconds: ready}, PeakRSSBytes: max(peakBefore, peak) * mib,
			SteadyRSSBytes: steady * mib, Relist: &relist.Result{PeakBeforeRSSBytes: peakBefore * mib, PeakRSSBytes: peak * mib, PeakLiveHeapBytes: 40 * mib,
				SteadyRSSBytes: after * mib, RestartSeconds: 12, Seconds: relistSeconds, CPUSeconds: 2.5, PodBytes: 190_000_000, Relists: counted}}
	}
	for name, tc := range map[string]struct {
		run     Run
		want    []string
		without []string
	}{
		"ratios against the steady set and against receive-only": {
			run: Run{Results: []Result{relisted("metawatch", 4, 6, 130, 150, 100, 110, &one), relisted("metawatch-stock-informer", 5, 9, 200, 260, 100, 120, nil),
				relisted("receive-only", 2, 3, 55, 56, 54, 54, &one)}},
			want: []string{
				"| 100000 | metawatch | 130 MiB | 100 MiB | 1.30x | 4.00 | 2.00x | 150 MiB | 1.50x | 40 MiB | 110 MiB | 12.0 | 6.0 | 2.00x | 2.5 | 1900 B | 1 |",
				"| 100000 | metawatch-stock-informer | 200 MiB | 100 MiB | 2.00x | 5.00 | 2.50x | 260 MiB | 2.60x | 40 MiB | 120 MiB | 12.0 | 9.0 | 3.00x | 2.5 | 1900 B | - |",
			},
		},
		"without receive-only in the run, no ratio to it": {
			run:  Run{Results: []Result{relisted("metawatch", 4, 6, 130, 150, 100, 110, &one)}},
			want: []string{"| 100000 | metawatch | 130 MiB | 100 MiB | 1.30x | 4.00 | - | 150 MiB | 1.50x |"},
		},
		"a run without the relist has no section": {
			run:     Run{Results: []Result{{Variant: "metawatch", N: 10, PeakRSSBytes: mib}}},
			without: []string{"forced relist"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			page := Markdown(tc.run)
			for _, want := range tc.want {
				if !strings.Contains(page, want) {
					t.Errorf("no row %q in:\n%s", want, page)
				}
			}
			for _, not := range tc.without {
				if strings.Contains(page, not) {
					t.Errorf("%q in:\n%s", not, page)
				}
			}
		})
	}
}

func TestSyncPeakIsTheOneBeforeTheRelist(t *testing.T) {
	r := Result{PeakRSSBytes: 300, Relist: &relist.Result{PeakBeforeRSSBytes: 200, PeakRSSBytes: 300}}
	if got := r.SyncPeakRSS(); got != 200 {
		t.Errorf("sync peak %d, want the one before the relist, 200", got)
	}
	if got := (Result{PeakRSSBytes: 300}).SyncPeakRSS(); got != 300 {
		t.Errorf("sync peak without a relist %d, want the whole run's, 300", got)
	}
}
