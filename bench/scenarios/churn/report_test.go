package churn

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/child"
)

// A row says who sent the status updates where it was not the harness, and
// a variant that did not churn has none.
func TestTableNamesKwokAndSkipsVariantsWithoutTheChurn(t *testing.T) {
	var b strings.Builder
	Table(&b, []Row{
		{N: 100, Variant: "metawatch", Churn: &Result{StatusUpdates: 300, StatusBy: "kwok", LabelChanges: 2, LatenciesMillis: []float64{10, 30},
			Activity: child.Activity{Events: 302, Reconciles: 4, Writes: 2, CPUSeconds: 0.25}}},
		{N: 100, Variant: "metadata-cache"},
		{N: 100, Variant: "typed", Churn: &Result{StatusUpdates: 300, LabelChanges: 2, LatenciesMillis: []float64{20, 20}}},
	})
	for _, want := range []string{"| 100 | metawatch | 300 (kwok) | 2 | 302 | 4 | 0.01 | 2 |", "| 100 | typed | 300 | 2 | 0 | 0 | 0.00 | 0 | 20 ms | 20 ms | 0 | 0.0 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no row %q in:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "metadata-cache") {
		t.Errorf("a row for a variant without the churn:\n%s", b.String())
	}
}
