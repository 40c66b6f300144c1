package report

import (
	"testing"

	"github.com/metawatch/metawatch/bench/scenarios/fanout"
)

func TestWriteTraceTable(t *testing.T) {
	// Four seconds of a fan-out held by its workers: every worker busy in
	// three of four samples, the rate allowed far above the pods written.
	byWorkers := []fanout.WriteSample{
		{Second: 1, Allowed: 100, Written: 90, BusyWorkers: 4, Workers: 4, Queued: 900},
		{Second: 2, Allowed: 200, Written: 100, BusyWorkers: 4, Workers: 4, Queued: 800},
		{Second: 4, Allowed: 400, Written: 210, BusyWorkers: 4, Workers: 4, Queued: 600, LatencyBackoffs: 1},
		{Second: 5, Allowed: 400, Written: 0, BusyWorkers: 0, Workers: 4, LatencyBackoffs: 1, ThrottledBackoffs: 2},
	}
	for name, c := range map[string]struct {
		fanOuts      []fanout.Result
		want, absent []string
	}{
		"a traced variant has a row: means, the workers' share and the backoffs": {
			fanOuts: []fanout.Result{{N: 400, Variant: "metawatch", Pods: 400, Seconds: 5, WriteTrace: byWorkers}, {N: 400, Variant: fanout.Bare, Pods: 400, Seconds: 2}},
			want: []string{
				"### What held metawatch's writes",
				// allowed: (100+200+400+400)/4 = 275; written: 400 pods over 5 seconds (a scrape missed second 3).
				"| 400 | metawatch | 5 | 275 (400) | 80 | 75% | 4 | 900 | 1 / 2 |",
			},
			absent: []string{"| 400 | bare | 5 |"},
		},
		"no trace, no section": {
			fanOuts: []fanout.Result{{N: 400, Variant: fanout.Bare, Pods: 400, Seconds: 2}},
			absent:  []string{"What held"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			checkPage(t, Markdown(Run{FanOuts: c.fanOuts}), c.want, c.absent)
		})
	}
}
