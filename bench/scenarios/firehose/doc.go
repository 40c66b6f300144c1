// Package firehose is the bench's firehose scenario: status-only updates (a
// kubelet's condition message) to the first namespace's pods as fast as
// the API server takes them, always sent by the harness, and what the
// variant spends on the events until it is quiet again: CPU, allocations
// and GC cycles per event, its idle CPU over the 5 s before, and a CPU
// profile of that time where the variant is a process of the harness's
// (bench/child). It runs in every variant's measurement, cache-only ones
// too, and in the bill's.
//
// Run measures one variant at one size and returns its figures (Result),
// which the harness keeps in the variant's report.Result; Table is the
// report's section of them. The figures' JSON names are the results format
// of bench/results.
package firehose
