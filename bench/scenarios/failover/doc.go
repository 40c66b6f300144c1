// Package failover is the bench's failover scenario: two metawatch
// processes (the binary, as users run it) with leader election, the leader
// killed with SIGKILL once both are Ready, and the time from the kill to a
// pod's label, removed at once, written back; for a cold standby, a warm one
// (--warm-standby) and a warm one with a shorter retry period.
//
// Run measures it at one size and returns its figures (Result), which the
// harness keeps in its report.Run; Table is the report's section of them.
// The figures' JSON names are the results format of bench/results.
package failover
