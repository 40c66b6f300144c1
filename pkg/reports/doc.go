// Package reports keeps what metawatch finds as OpenReports reports
// (openreports.io/v1alpha1, the API Kyverno and Trivy's adapter write and
// Policy Reporter shows): one Report per namespace with results and one
// ClusterReport, each bounded in results (Builder), written only when they
// change and at most once a minute, through the guard and the paced client
// the process gives (Writer). metawatch check -o openreports builds the
// same from the preview.
package reports
