package churn

import (
	"fmt"
	"strings"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/stats"
)

// Result is status-only updates and label changes at fixed rates.
type Result struct {
	Seconds       float64 `json:"seconds"`
	StatusUpdates int     `json:"statusUpdates"`
	// StatusBy is who sent the status updates: "kwok" (the pods' simulated
	// kubelet: StatusUpdates are those seen), or empty for the harness.
	StatusBy     string         `json:"statusBy,omitempty"`
	LabelChanges int            `json:"labelChanges"`
	Activity     child.Activity `json:"activity"`
	// LatenciesMillis are, per label change, the time from sending it to seeing the rule's write.
	LatenciesMillis []float64 `json:"latenciesMillis"`
	// Missed label changes saw no write within the wait after the churn.
	Missed int `json:"missed"`
}

// Percentile is the p-th percentile (0..100) of the latencies, in milliseconds.
func (c Result) Percentile(p float64) float64 { return stats.Percentile(c.LatenciesMillis, p) }

// Row is one variant's figures at one size the report's section reads:
// its churn's (nil where it did not run it).
type Row struct {
	N       int
	Variant string
	Churn   *Result
}

// Table is the report's section of the scenario: every variant's churn
// (rows), in the run's order.
func Table(b *strings.Builder, rows []Row) {
	b.WriteString("\n## Churn: status-only updates and label changes the rule must undo\n\n")
	b.WriteString("| pods | variant | status updates | label changes | events | reconciles | reconciles / event | writes | latency p50 | latency p99 | missed | CPU s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if c := r.Churn; c != nil {
			a := c.Activity
			fmt.Fprintf(b, "| %d | %s | %d%s | %d | %d | %d | %.2f | %d | %.0f ms | %.0f ms | %d | %.1f |\n", r.N, r.Variant, c.StatusUpdates, by(c.StatusBy), c.LabelChanges,
				a.Events, a.Reconciles, a.ReconcilesPerEvent(), a.Writes, c.Percentile(50), c.Percentile(99), c.Missed, a.CPUSeconds)
		}
	}
}

// by names who sent the status updates, if not the harness.
func by(sender string) string {
	if sender == "" {
		return ""
	}
	return " (" + sender + ")"
}
