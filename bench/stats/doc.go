// Package stats is the bench's arithmetic of samples: percentiles of
// latencies, shared by the report's churn table and the fanout scenario's
// probes.
package stats
