package report

import (
	"fmt"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/scenarios/bill"
	"github.com/metawatch/metawatch/bench/scenarios/churn"
	"github.com/metawatch/metawatch/bench/scenarios/converge"
	"github.com/metawatch/metawatch/bench/scenarios/firehose"
	"github.com/metawatch/metawatch/bench/scenarios/initialsync"
	"github.com/metawatch/metawatch/bench/scenarios/relist"
)

// The scenarios' sections read, of every variant's result, the figures
// their rows hold: a scenario's package imports nothing of this one.

// syncRows are every result's figures the sync's sections read.
func syncRows(run Run) []initialsync.Row {
	rows := make([]initialsync.Row, len(run.Results))
	for i, r := range run.Results {
		rows[i] = initialsync.Row{N: r.N, Variant: r.Variant, Objects: r.Objects, CacheOnly: r.CacheOnly, Deployed: r.Deployed, Sync: r.Sync,
			PeakRSSBytes: r.PeakRSSBytes, SyncPeakRSSBytes: r.SyncPeakRSS(), SteadyRSSBytes: r.SteadyRSSBytes, CPUSeconds: r.CPUSeconds}
	}
	return rows
}

// memoryRows are the resident sets the Go runtime accounted for: each
// variant's at its sync's peak, steady, and at its relist's peak and after
// it, then each sharded replica's steady set.
func memoryRows(run Run) []initialsync.MemoryRow {
	var rows []initialsync.MemoryRow
	for _, r := range run.Results {
		rows = append(rows, initialsync.MemoryRow{Pods: r.N, Who: r.Variant + ", at its sync's peak", RSS: r.Sync.PeakSampledRSSBytes, Memory: r.Sync.PeakMemory},
			initialsync.MemoryRow{Pods: r.N, Who: r.Variant, RSS: r.SteadyRSSBytes, Memory: r.SteadyMemory})
		if l := r.Relist; l != nil {
			rows = append(rows, initialsync.MemoryRow{Pods: r.N, Who: r.Variant + ", at its relist's peak", RSS: l.PeakSampledRSSBytes, Memory: l.PeakMemory},
				initialsync.MemoryRow{Pods: r.N, Who: r.Variant + ", after its relist", RSS: l.SteadyRSSBytes, Memory: l.SteadyMemory})
		}
	}
	for _, s := range run.Shards {
		for i, r := range s.Replicas {
			who := fmt.Sprintf("metawatch, replica %d of %d (%s)", i+1, len(s.Replicas), s.Mode)
			rows = append(rows, initialsync.MemoryRow{Pods: r.CachedPods, Who: who, RSS: r.SteadyRSS, Memory: r.SteadyMemory})
		}
	}
	return rows
}

// relistRows are every result's figures the relist scenario's section reads.
func relistRows(run Run) []relist.Row {
	rows := make([]relist.Row, len(run.Results))
	for i, r := range run.Results {
		rows[i] = relist.Row{N: r.N, Variant: r.Variant, SyncPeakRSSBytes: r.SyncPeakRSS(), SteadyRSSBytes: r.SteadyRSSBytes,
			ReadySeconds: r.Sync.ReadySeconds, Relist: r.Relist}
	}
	return rows
}

// churnRows are every result's figures the churn scenario's section reads.
func churnRows(run Run) []churn.Row {
	rows := make([]churn.Row, len(run.Results))
	for i, r := range run.Results {
		rows[i] = churn.Row{N: r.N, Variant: r.Variant, Churn: r.Churn}
	}
	return rows
}

// convergeRows are every result's figures the converge scenario's section reads.
func convergeRows(run Run) []converge.Row {
	rows := make([]converge.Row, len(run.Results))
	for i, r := range run.Results {
		rows[i] = converge.Row{N: r.N, Variant: r.Variant, Converge: r.Converge}
	}
	return rows
}

// firehoseRows are every result's figures the firehose's section reads.
func firehoseRows(run Run) []firehose.Row {
	rows := make([]firehose.Row, len(run.Results))
	for i, r := range run.Results {
		rows[i] = firehose.Row{N: r.N, Variant: r.Variant, Deployed: r.Deployed, Firehose: r.Firehose}
	}
	return rows
}

// billRows are every result's figures the bill's section reads.
func billRows(run Run) []bill.Row {
	rows := make([]bill.Row, len(run.Results))
	for i, r := range run.Results {
		rows[i] = bill.Row{N: r.N, Variant: r.Variant, Deployed: r.Deployed, Share: r.APIServer}
		for key, b := range r.Sync.ReceivedBytesPerObjectByKey {
			if probe.IsPodData(key) {
				rows[i].PodBytesPerPod += b
			}
		}
		if f := r.Firehose; f != nil {
			rows[i].Firehose = &bill.FirehoseCounts{StatusUpdates: f.StatusUpdates, Events: f.Events, ReceivedBytes: f.ReceivedBytes}
		}
	}
	return rows
}
