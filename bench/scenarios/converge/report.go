package converge

import (
	"fmt"
	"strings"

	"github.com/metawatch/metawatch/bench/child"
)

// Result is one namespace label change until every pod of it carries the new value.
type Result struct {
	Pods     int            `json:"pods"`
	Seconds  float64        `json:"seconds"`
	Activity child.Activity `json:"activity"`
}

// Bare is the reference for convergence: the same applies made by a bare
// client with the same concurrency, no cache, no controller.
type Bare struct {
	N       int     `json:"n"`
	Pods    int     `json:"pods"`
	Seconds float64 `json:"seconds"`
}

// Row is one variant's figures at one size the report's section reads:
// its converge's (nil where it did not run it).
type Row struct {
	N        int
	Variant  string
	Converge *Result
}

// Table is the report's section of the scenario: at each size, the bare
// client, then every variant that converged (rows) against it.
func Table(b *strings.Builder, bares []Bare, rows []Row) {
	b.WriteString("\n## Converge: one namespace label change until every pod of it carries the new value\n\n")
	b.WriteString("| pods | variant | pods relabelled | seconds | pods / s | throughput / bare client's | reconciles / event | CPU s |\n|---|---|---|---|---|---|---|---|\n")
	for _, bare := range bares {
		fmt.Fprintf(b, "| %d | bare client (same applies, no cache) | %d | %.2f | %.0f | 1.00 | - | - |\n", bare.N, bare.Pods, bare.Seconds, float64(bare.Pods)/bare.Seconds)
		for _, r := range rows {
			if c := r.Converge; c != nil && r.N == bare.N {
				fmt.Fprintf(b, "| %d | %s | %d | %.2f | %.0f | %.2f | %.2f | %.1f |\n", r.N, r.Variant, c.Pods, c.Seconds, float64(c.Pods)/c.Seconds,
					bare.Seconds/c.Seconds, c.Activity.ReconcilesPerEvent(), c.Activity.CPUSeconds)
			}
		}
	}
}
