package report

import (
	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/scenarios/bill"
	"github.com/metawatch/metawatch/bench/scenarios/churn"
	"github.com/metawatch/metawatch/bench/scenarios/converge"
	"github.com/metawatch/metawatch/bench/scenarios/firehose"
	"github.com/metawatch/metawatch/bench/scenarios/relist"
)

// The scenarios' sections read, of every variant's result, the figures
// their rows hold: a scenario's package imports nothing of this one.

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
