package firehose

import (
	"strings"
	"testing"
)

func TestFirehoseTableTakesIdleOutOfBothSides(t *testing.T) {
	measured := func(cpu, idle float64) *Result {
		return &Result{StatusUpdates: 1000, Events: 1000, CPUSeconds: cpu, WindowSeconds: 10, IdleCPUPerSecond: idle}
	}
	for name, tc := range map[string]struct {
		mine, floor *Result
		want        string
	}{
		"idle taken out of both sides changes the ratio": {
			mine: measured(0.15, 0.01), floor: measured(0.25, 0.005), want: "| 10.0 | 0.60x | 0.25x |",
		},
		"a process idle for the whole window costs nothing per event": {
			mine: measured(0.1, 0.01), floor: measured(0.3, 0.01), want: "| 10.0 | 0.33x | 0.00x |",
		},
		"a run that did not measure idle has no idle figures": {
			mine: &Result{StatusUpdates: 1000, Events: 1000, CPUSeconds: 0.15}, floor: measured(0.25, 0.005), want: "| - | 0.60x | - |",
		},
	} {
		t.Run(name, func(t *testing.T) {
			rows := []Row{{Variant: "metawatch", N: 100, Firehose: tc.mine}, {Variant: FirehoseFloor, N: 100, Firehose: tc.floor}}
			var b strings.Builder
			Table(&b, rows, 100)
			if row := rowOf(b.String(), "| 100 | metawatch |"); !strings.HasSuffix(row, tc.want) {
				t.Errorf("metawatch's row %q, want it to end %q", row, tc.want)
			}
		})
	}
}

// rowOf is the line of table that starts with prefix, "" if none.
func rowOf(table, prefix string) string {
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}
