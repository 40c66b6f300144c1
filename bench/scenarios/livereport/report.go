package livereport

import (
	"fmt"
	"strings"
)

// Result is one run of a read-only listing of the cluster's pods: the
// live report (metawatch check --live --report), or its baseline, the same
// pods listed with kubectl get -o yaml.
type Result struct {
	Pods    int     `json:"pods"`
	Tool    string  `json:"tool"`
	Seconds float64 `json:"seconds"`
	// PeakRSSBytes is the process's peak resident set (getrusage's maxrss).
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// ExitCode is -1 for a process killed by a signal (the OOM killer, or
	// an operator saving the machine): its figures are where it was stopped.
	ExitCode int `json:"exitCode"`
}

func (r Result) killed() bool { return r.ExitCode < 0 }

// Table is the report's section of the scenario: the live report against
// kubectl at each size (kubectl measured up to kubectlMaxPods; 0: at every
// size).
func Table(b *strings.Builder, reports []Result, kubectlMaxPods int) {
	if len(reports) == 0 {
		return
	}
	b.WriteString("\n## Live report\n\n`metawatch check --live --report` (metadata-only protobuf lists, 500 a page, evaluated and tallied as they come) " +
		"against `kubectl get pods -A -l <bench selector> -o yaml` to /dev/null, on the same pods, one after the other; each a process of its own.")
	if limit := kubectlMaxPods; limit > 0 {
		fmt.Fprintf(b, " kubectl ran only up to %d pods (--report-kubectl-max-pods): above, its time and memory are not measured.", limit)
	}
	b.WriteString("\n\n" +
		"| pods | tool | time s | peak RSS MiB | time vs kubectl | peak RSS vs kubectl |\n| --- | --- | --- | --- | --- | --- |\n")
	base := map[int]Result{}
	for _, r := range reports {
		if r.Tool == "kubectl" {
			base[r.Pods] = r
		}
	}
	for _, r := range reports {
		k, ok := base[r.Pods]
		timeRatio, rssRatio := "-", "-"
		switch {
		case ok && r.Tool != "kubectl" && k.killed():
			timeRatio, rssRatio = fmt.Sprintf("< %.3fx", r.Seconds/k.Seconds), fmt.Sprintf("< %.3fx", float64(r.PeakRSSBytes)/float64(k.PeakRSSBytes))
		case ok && r.Tool != "kubectl" && k.Seconds > 0 && k.PeakRSSBytes > 0:
			timeRatio = fmt.Sprintf("%.2fx", r.Seconds/k.Seconds)
			rssRatio = fmt.Sprintf("%.2fx", float64(r.PeakRSSBytes)/float64(k.PeakRSSBytes))
		}
		tool, at := r.Tool, ""
		if r.killed() {
			tool, at = r.Tool+" (killed, unfinished)", "> "
		}
		fmt.Fprintf(b, "| %d | %s | %s%.1f | %s%.0f | %s | %s |\n", r.Pods, tool, at, r.Seconds, at, float64(r.PeakRSSBytes)/(1<<20), timeRatio, rssRatio)
	}
}
