package failover

import (
	"fmt"
	"strings"
)

// Result is one run of the failover scenario: two metawatch processes
// (the binary, as users run it) with leader election, the leader killed
// with SIGKILL once both were Ready, and a pod's label removed at once.
type Result struct {
	N    int    `json:"n"`
	Mode string `json:"mode"` // "cold" (a standby syncs once it leads) or "warm" (--warm-standby)
	// LeaseSeconds is --leader-election-lease-duration: what a standby waits
	// for before it takes a Lease its holder stopped renewing.
	LeaseSeconds float64 `json:"leaseSeconds"`
	// RetrySeconds is --leader-election-retry-period: how often a standby
	// tries the Lease (client-go stretches it by up to 2.2x).
	RetrySeconds float64 `json:"retrySeconds"`
	// FirstWriteSeconds is from the kill to the removed label written back.
	FirstWriteSeconds float64 `json:"firstWriteSeconds"`
	// LeaderReadySeconds and StandbyReadySeconds are from each process's start to Ready.
	LeaderReadySeconds  float64 `json:"leaderReadySeconds"`
	StandbyReadySeconds float64 `json:"standbyReadySeconds"`
	// LeaderRSS and StandbyRSS are their resident sets just before the kill.
	LeaderRSS  int64 `json:"leaderRSSBytes"`
	StandbyRSS int64 `json:"standbyRSSBytes"`
}

// Table is the report's section of the scenario: each run's first write
// against the goal, the lease duration plus 2 s.
func Table(b *strings.Builder, failovers []Result) {
	if len(failovers) == 0 {
		return
	}
	b.WriteString("\n## Failover: the leader killed (kill -9)\n\n")
	b.WriteString("Two metawatch processes (the binary, default flags but `--leader-elect`), the standby cold (it builds and syncs its cache once it leads) or warm (`--warm-standby`: synced before). " +
		"Once both were Ready the leader was killed and a pod's label removed at once; first write is from the kill to the label written back. " +
		"The goal is the lease duration plus 2 s. client-go's elector tries the Lease every retry period stretched by up to 2.2x, and counts the lease duration from when it saw the last renewal, " +
		"which it also learns only at such a try: with the default retry period of 2 s it takes the Lease 13 to 24 s after the kill, whatever the standby has ready.\n\n")
	b.WriteString("| pods | standby | lease s | retry s | first write s | goal met | leader ready s | standby ready s | leader RSS | standby RSS |\n|---:|---|---:|---:|---:|---|---:|---:|---:|---:|\n")
	for _, f := range failovers {
		met := "yes"
		if f.FirstWriteSeconds > f.LeaseSeconds+2 {
			met = "no"
		}
		fmt.Fprintf(b, "| %d | %s | %.0f | %.1f | %.1f | %s | %.1f | %.1f | %.0f MiB | %.0f MiB |\n", f.N, f.Mode, f.LeaseSeconds, f.RetrySeconds, f.FirstWriteSeconds, met,
			f.LeaderReadySeconds, f.StandbyReadySeconds, inMiB(f.LeaderRSS), inMiB(f.StandbyRSS))
	}
}

// inMiB is bytes in MiB.
func inMiB(bytes int64) float64 { return float64(bytes) / (1 << 20) }
