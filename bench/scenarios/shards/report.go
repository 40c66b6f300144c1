package shards

import (
	"fmt"
	"strings"
)

// Result is N sharded metawatch replicas running at once on the same pods.
type Result struct {
	N int `json:"n"` // pods in the cluster
	// Mode is "server" (the API server filters by shard) or "client" (it
	// does not, its ShardedListAndWatch gate off: each replica drops the
	// others' objects on receipt).
	Mode     string    `json:"mode"`
	Replicas []Replica `json:"replicas"`
	// Union and Overlap are the pods cached by any replica and by more than one.
	Union   int `json:"cachedUnion"`
	Overlap int `json:"cachedOverlap"`
	// ChurnSeconds and StatusUpdates are the status-only churn all replicas saw at once.
	ChurnSeconds  float64 `json:"churnSeconds"`
	StatusUpdates int     `json:"statusUpdates"`
}

// Replica is one replica's figures: its sync, then its share of the churn.
type Replica struct {
	Buckets       int     `json:"buckets"`
	CachedPods    int     `json:"cachedPods"`
	SyncSeconds   float64 `json:"syncSeconds"`
	SyncBytes     int64   `json:"syncReceivedPodBytes"` // pod lists and watches, off the wire
	SyncEvents    int64   `json:"syncEvents"`           // pod and namespace events its informers were handed
	ChurnBytes    int64   `json:"churnReceivedPodBytes"`
	ChurnEvents   int64   `json:"churnEvents"`
	ChurnCPU      float64 `json:"churnCPUSeconds"`
	RetainedBytes float64 `json:"retainedHeapBytesPerPod"`
	// PeakRSS is the replica's peak resident set by the end of its sync and
	// the idle window after it; SteadyRSS its resident set after that window.
	PeakRSS   int64 `json:"peakRSSBytes,omitempty"`
	SteadyRSS int64 `json:"steadyRSSBytes,omitempty"`
	// SteadyMemory is the Go runtime's account of its memory when SteadyRSS was taken.
	SteadyMemory map[string]uint64 `json:"steadyMemoryClasses,omitempty"`
}

// Table is the report's section of the scenario: every replica's share of what a single replica (N=1, the
// same mode, the same run) received, decoded and cached; of the churn, its
// share of the status updates of its own run (runs differ a little in how
// many kwok sent), and its bytes per status update against a single replica's.
func Table(b *strings.Builder, runs []Result) {
	if len(runs) == 0 {
		return
	}
	b.WriteString("\n## Sharding: N replicas on the same pods\n\n")
	b.WriteString("Each replica's figures as a share of one replica's (N = 1, same mode, same run); 1/N is the goal. " +
		"Churn events are a share of the status updates of the replicas' own churn, churn bytes per status update a share of a single replica's. " +
		"server: the API server filters by shard; client: its ShardedListAndWatch gate is off, every replica receives every pod and drops the others' before decoding them.\n\n")
	b.WriteString("| pods | mode | N | replica | buckets | pods cached | sync bytes received | sync events | churn status updates | churn events | churn bytes received | churn CPU s | sync s | peak RSS | steady RSS | cached union / overlap |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range runs {
		base, baseUpdates := single(runs, s.N, s.Mode)
		for i, r := range s.Replicas {
			perUpdate := func(bytes int64, updates int) float64 { return float64(bytes) / float64(max(updates, 1)) }
			fmt.Fprintf(b, "| %d | %s | %d | %d | %d | %d (%s) | %s | %s | %d | %d (%s) | %.1f MiB (%s) | %.2f | %.1f | %s | %s | %d / %d |\n",
				s.N, s.Mode, len(s.Replicas), i, r.Buckets, r.CachedPods, share(float64(r.CachedPods), float64(base.CachedPods)),
				mib(r.SyncBytes, base.SyncBytes), counted(r.SyncEvents, base.SyncEvents), s.StatusUpdates,
				r.ChurnEvents, share(float64(r.ChurnEvents), float64(s.StatusUpdates)),
				float64(r.ChurnBytes)/(1<<20), share(perUpdate(r.ChurnBytes, s.StatusUpdates), perUpdate(base.ChurnBytes, baseUpdates)),
				r.ChurnCPU, r.SyncSeconds, rssOrDash(r.PeakRSS), rssOrDash(r.SteadyRSS), s.Union, s.Overlap)
		}
	}
}

// single is the single replica of n pods in mode and its churn's status
// updates (zero if none ran).
func single(runs []Result, n int, mode string) (Replica, int) {
	for _, s := range runs {
		if s.N == n && s.Mode == mode && len(s.Replicas) == 1 {
			return s.Replicas[0], s.StatusUpdates
		}
	}
	return Replica{}, 0
}

func share(v, base float64) string {
	if base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*v/base)
}

func mib(v, base int64) string {
	return fmt.Sprintf("%.1f MiB (%s)", float64(v)/(1<<20), share(float64(v), float64(base)))
}

func counted(v, base int64) string {
	return fmt.Sprintf("%d (%s)", v, share(float64(v), float64(base)))
}

// rssOrDash is a resident set in MiB, "-" if not measured (runs before it was).
func rssOrDash(bytes int64) string {
	if bytes == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20))
}
