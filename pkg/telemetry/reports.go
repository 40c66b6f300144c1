package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// OpenReportsAvailable is 1 while the API server serves the OpenReports
// kinds that --open-reports writes, 0 while it does not (the CRDs are not
// installed); absent without --open-reports.
var OpenReportsAvailable = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "metawatch_openreports_available",
	Help: "1 while the API server serves openreports.io/v1alpha1 Reports, which --open-reports writes; 0 while it does not (install the CRDs).",
})

// Reports is how many OpenReports reports this replica keeps now.
var Reports = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "metawatch_openreports_reports",
	Help: "OpenReports Reports and ClusterReports this replica keeps now: one per namespace with results, and one for cluster-scoped objects.",
})

// ReportWrites counts the writes of OpenReports reports.
var ReportWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_openreports_writes_total",
	Help: "Writes of OpenReports reports, by kind (Report, ClusterReport), verb (apply, delete) and result (applied, error, dry-run).",
}, []string{"kind", "verb", "result"})

func init() { ctrlmetrics.Registry.MustRegister(OpenReportsAvailable, Reports, ReportWrites) }
