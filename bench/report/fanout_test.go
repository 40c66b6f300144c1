package report

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/scenarios/fanout"
)

func TestFanOutTable(t *testing.T) {
	cpu := func(s float64) *float64 { return &s }
	probe := func(idle, during float64) fanout.ProbeLatency {
		return fanout.ProbeLatency{Idle: fanout.ProbeWindow{P99Millis: idle}, During: fanout.ProbeWindow{P99Millis: during}}
	}
	measured := []fanout.Result{
		{N: 10_000, Variant: "metawatch", Pods: 10_000, Seconds: 200, PeakWritesPerSecond: 61, ProbeGet: probe(4, 5), OtherWriter: probe(6, 9), APIServerCPUSeconds: cpu(120)},
		{N: 10_000, Variant: "metawatch-qps50", Flags: []string{"--kube-api-qps=50", "--kube-api-burst=100"}, Pods: 10_000, Seconds: 201, PeakWritesPerSecond: 60,
			ProbeGet: probe(4, 5), OtherWriter: probe(6, 9), APIServerCPUSeconds: cpu(118)},
		{N: 10_000, Variant: fanout.Bare, Pods: 10_000, Seconds: 50, PeakWritesPerSecond: 230, ProbeGet: fanout.ProbeLatency{Idle: fanout.ProbeWindow{P99Millis: 4},
			During: fanout.ProbeWindow{P99Millis: 40, Errors: 2}}, OtherWriter: probe(6, 60), APIServerCPUSeconds: cpu(90)},
	}
	for name, c := range map[string]struct {
		fanOuts      []fanout.Result
		want, absent []string
	}{
		"every variant has a row, its time against the bare client's": {
			fanOuts: measured,
			want: []string{
				"## Fan-out: every bench Namespace relabelled",
				"| pods | variant | seconds to converge | writes/s | probe GET p99 (idle → during) | other writer's patch p99 (idle → during) | API server CPU s | time vs bare |",
				"| 10000 | metawatch | 200.0 | 50 (61) | 4.0 → 5.0 ms (1.2x) | 6.0 → 9.0 ms (1.5x) | 120.0 | 4.00x |",
				"| 10000 | bare | 50.0 | 200 (230) | 4.0 → 40.0 ms (10.0x), 2 errors | 6.0 → 60.0 ms (10.0x) | 90.0 | 1.00x |",
				"- `metawatch-qps50`: the metawatch binary with `--kube-api-qps=50 --kube-api-burst=100`",
				"- `metawatch`: the metawatch binary with its default flags",
			},
			absent: []string{"was not measured"},
		},
		"without the bare client, no time against it": {
			fanOuts: measured[:1],
			want:    []string{"| 10000 | metawatch | 200.0 | 50 (61) | 4.0 → 5.0 ms (1.2x) | 6.0 → 9.0 ms (1.5x) | 120.0 | - |"},
		},
		"the API server's CPU not read says so": {
			fanOuts: []fanout.Result{{N: 100, Variant: fanout.Bare, Pods: 100, Seconds: 1, ProbeGet: probe(2, 3), OtherWriter: probe(2, 3)}},
			want:    []string{"| 100 | bare | 1.0 | 100 (0) | 2.0 → 3.0 ms (1.5x) | 2.0 → 3.0 ms (1.5x) | - | 1.00x |", "on this target it was not measured"},
		},
		"no fan-out, no section": {
			absent: []string{"Fan-out"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			page := Markdown(Run{FanOuts: c.fanOuts, Options: Options{FanOutIdleSeconds: 15}})
			checkPage(t, page, c.want, c.absent)
		})
	}
}

// checkPage fails t for each of want the page lacks and each of absent it has.
func checkPage(t *testing.T, page string, want, absent []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("the page lacks %q:\n%s", w, page)
		}
	}
	for _, a := range absent {
		if strings.Contains(page, a) {
			t.Errorf("the page has %q:\n%s", a, page)
		}
	}
}
