// Package initialsync is the bench's sync scenario (--scenarios sync), which
// every variant starts with: the variant's process (bench/child) lists and
// watches the pods until its caches are synced and its initial reconciles
// done, and measures itself meanwhile (its Synced line: retained heap,
// allocations, bytes received, time, CPU, the most live heap and resident
// set); then it runs idle for the steady window and its resident set is
// taken, with the Go runtime's account of it (steady memory).
//
// Figures turns a variant's Synced line into its figures (Result), which the
// harness keeps in the variant's report.Result, and Steady takes the steady
// set; Table is the report's sections of the sync (the summary against the
// baseline, the sync, the bytes by request) and MemoryTable the one that
// splits each resident set the runtime accounted for. The figures' JSON
// names are the results format of bench/results.
package initialsync
