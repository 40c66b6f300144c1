package converge

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/child"
)

// Each variant's row sits under the bare client of its size, its
// throughput against the bare client's.
func TestTableSetsEachVariantAgainstTheBareClientOfItsSize(t *testing.T) {
	var b strings.Builder
	Table(&b, []Bare{{N: 100, Pods: 50, Seconds: 2}, {N: 200, Pods: 50, Seconds: 1}}, []Row{
		{N: 100, Variant: "metawatch", Converge: &Result{Pods: 50, Seconds: 4, Activity: child.Activity{Events: 100, Reconciles: 50, CPUSeconds: 0.5}}},
		{N: 100, Variant: "metadata-cache"},
		{N: 200, Variant: "metawatch", Converge: &Result{Pods: 50, Seconds: 2}},
	})
	want := "| 100 | bare client (same applies, no cache) | 50 | 2.00 | 25 | 1.00 | - | - |\n" +
		"| 100 | metawatch | 50 | 4.00 | 12 | 0.50 | 0.50 | 0.5 |\n" +
		"| 200 | bare client (same applies, no cache) | 50 | 1.00 | 50 | 1.00 | - | - |\n" +
		"| 200 | metawatch | 50 | 2.00 | 25 | 0.50 | 0.00 | 0.0 |\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("the table:\n%s\nwant it to end:\n%s", b.String(), want)
	}
}
