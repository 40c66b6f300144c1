package report

import (
	"testing"

	"github.com/metawatch/metawatch/bench/scenarios/bill"
	"github.com/metawatch/metawatch/bench/scenarios/firehose"
	"github.com/metawatch/metawatch/bench/scenarios/initialsync"
)

func TestBillTable(t *testing.T) {
	const mib = 1 << 20
	alone := bill.Reference{N: 1000, RSSBytes: 500 * mib, IdleCPUPerSecond: 0.1, FirehoseSeconds: 10, FirehoseCPUSeconds: 3, FirehoseStatusUpdates: 1000}
	variant := Result{N: 1000, Variant: "metawatch", Sync: initialsync.Result{ReceivedBytesPerObject: 2100,
		ReceivedBytesPerObjectByKey: map[string]float64{"LIST pods protobuf": 1000, "WATCH pods protobuf": 926, "other json": 100, "PATCH pods json": 74}},
		Firehose: &firehose.Result{StatusUpdates: 1000, Events: 1000, ReceivedBytes: 600_000},
		APIServer: &bill.Share{RSSBeforeBytes: 500 * mib, StartSeconds: 4, StartCPUSeconds: 2.4, StartPeakRSSBytes: 740 * mib,
			SteadyRSSBytes: 510 * mib, FirehoseSeconds: 12, FirehoseCPUSeconds: 4.2}}
	quiet := variant
	quiet.Variant, quiet.APIServer = "quiet", &bill.Share{RSSBeforeBytes: 500 * mib, StartSeconds: 10, StartCPUSeconds: 0.5, StartPeakRSSBytes: 500 * mib,
		SteadyRSSBytes: 490 * mib, FirehoseSeconds: 12, FirehoseCPUSeconds: 4.2}
	for name, c := range map[string]struct {
		run          Run
		want, absent []string
	}{
		"a variant's row is its share beyond the server alone": {
			// sync: 2.4 s less 0.1/s idle for 4 s; firehose: (4.2-1.2)/1000
			// updates = 3 ms each, less alone's (3-1)/1000 = 2 ms each.
			run:  Run{Results: []Result{variant}, APIServerAlone: []bill.Reference{alone}},
			want: []string{"## The control plane's bill", "| 1000 | metawatch | 1926 | 600 | 2.00 | 1000.0 | 500 MiB | +240 MiB | +10 MiB |", "| 1000 | 500 MiB | 0.100 | 1000 | 3.00 | 2000.0 |"},
		},
		"a sync cheaper than idle counts as nothing, and memory can go down": {
			run:  Run{Results: []Result{quiet}, APIServerAlone: []bill.Reference{alone}},
			want: []string{"| 1000 | quiet | 1926 | 600 | 0.00 | 1000.0 | 500 MiB | +0 MiB | -10 MiB |"},
		},
		"a variant without the firehose has no per-event figures": {
			run:  Run{Results: []Result{func() Result { r := variant; r.Firehose = nil; return r }()}, APIServerAlone: []bill.Reference{alone}},
			want: []string{"| 1000 | metawatch | 1926 | - | 2.00 | - | 500 MiB | +240 MiB | +10 MiB |"},
		},
		"the chart, measured from outside, has no byte figures, and no steady window no steady figure": {
			run: Run{Results: []Result{func() Result {
				r := variant
				r.Variant, r.Deployed, r.APIServer = "chart", true, &bill.Share{RSSBeforeBytes: 500 * mib, StartSeconds: 4, StartCPUSeconds: 2.4,
					StartPeakRSSBytes: 740 * mib, FirehoseSeconds: 12, FirehoseCPUSeconds: 4.2}
				return r
			}()}, APIServerAlone: []bill.Reference{alone}},
			want: []string{"| 1000 | chart | - | - | 2.00 | 1000.0 | 500 MiB | +240 MiB | - |"},
		},
		"a variant kept to smaller sizes is named on the page": {
			run:  Run{Options: Options{VariantMaxPods: map[string]int{"typed-cache": 100_000}}, Results: []Result{variant}, APIServerAlone: []bill.Reference{alone}},
			want: []string{"`typed-cache` ran only at sizes up to 100000 pods (`--variant-max-pods`)."},
		},
		"without the reference at that size there is no bill": {
			run:    Run{Results: []Result{variant}, APIServerAlone: []bill.Reference{{N: 2000}}},
			absent: []string{"## The control plane's bill"},
		},
		"a run without the bill has no section": {
			run:    Run{Results: []Result{{N: 1000, Variant: "metawatch"}}},
			absent: []string{"## The control plane's bill"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			page := Markdown(c.run)
			checkPage(t, page, c.want, c.absent)
		})
	}
}
