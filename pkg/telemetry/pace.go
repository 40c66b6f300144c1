package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// WriteRate is the writes per second the pacer allows now (package pace).
var WriteRate = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "metawatch_write_rate",
	Help: "Writes per second metawatch allows itself now, adapted to the API server's load between --write-rate-min and --write-rate-max.",
})

// WritesThrottled counts the writes the API server answered 429 (API
// Priority and Fairness rejected them); client-go retries them.
var WritesThrottled = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "metawatch_writes_throttled_total",
	Help: "Writes the API server answered 429 Too Many Requests (API Priority and Fairness); each is retried after its Retry-After.",
})

// WriteBackoffs counts the pacer's decreases, by reason: throttled (a 429)
// or latency (the probe, or without one the writes, answered slowly).
var WriteBackoffs = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_write_backoffs_total",
	Help: "Times the write rate was lowered, by reason: throttled (a 429) or latency (the write probe, or without one the writes, answered slowly).",
}, []string{"reason"})

// WritePriorityLevel is 1 for the flow schema and priority level that
// served the last write (their uids, from the X-Kubernetes-PF-* headers).
var WritePriorityLevel = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "metawatch_write_priority_level",
	Help: "1 for the API Priority and Fairness flow schema and priority level (uids) that served metawatch's last write.",
}, []string{"flow_schema_uid", "priority_level_uid"})

// WriteProbeSeconds is the latency of the pacer's probe, a small read sent
// as other clients' reads are: what they feel of metawatch's writes, and
// the write rate's sign of a queue (package pace).
var WriteProbeSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "metawatch_write_probe_seconds",
	Help:    "Latency of the write pacer's probe (a GET of the selectors ConfigMap's metadata, or with --config-file of Namespace default, 4 a second while writes flow, one every 5 s idle): the API server's latency as other clients' reads feel it, which lowers the write rate when it rises.",
	Buckets: prometheus.ExponentialBuckets(0.001, 2, 14), // 1ms to about 8s, past the probe's 5s timeout
})

func init() {
	ctrlmetrics.Registry.MustRegister(WriteRate, WritesThrottled, WriteBackoffs, WritePriorityLevel, WriteProbeSeconds)
}
