// Package livereport is the bench's report scenario: metawatch check --live
// --report against its baseline, kubectl get -o yaml of the same pods, each
// a process of its own, timed, with its peak resident set.
//
// Run times the tools at one size and returns their figures (Result), which
// the harness keeps in its report.Run; Table is the report's section of them.
// The figures' JSON names are the results format of bench/results.
package livereport
