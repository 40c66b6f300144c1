package report

import (
	"fmt"
	"strings"
)

// controlPlaneTable is how the population was seeded, and what the local
// kube-apiserver and etcd held at each size: what the machine spent beside
// the variants.
func controlPlaneTable(b *strings.Builder, run Run) {
	if len(run.Seeding) == 0 && len(run.ControlPlane) == 0 {
		return
	}
	b.WriteString("\n## Seeding, and what the API server and etcd held\n\n")
	if len(run.Seeding) > 0 {
		b.WriteString("Seeding grows the population to each size: through the API (a create and a status update per pod), or copied from the first namespace straight into etcd " +
			"(`--seed etcd`), the time including the API server's restart until it served every pod.\n\n")
		b.WriteString("| pods | via | seconds | pods / s |\n|---|---|---:|---:|\n")
		for _, s := range run.Seeding {
			fmt.Fprintf(b, "| %d..%d | %s | %.0f | %.0f |\n", s.From, s.To-1, s.Via, s.Seconds, float64(s.To-s.From)/max(s.Seconds, 1e-9))
		}
	}
	if len(run.ControlPlane) > 0 {
		b.WriteString("\nThe local control plane after every variant ran at each size: peaks since the API server last started (each etcd copy restarts it).\n\n")
		b.WriteString("| pods | kube-apiserver peak RSS | kube-apiserver RSS | etcd peak RSS | etcd RSS | etcd database |\n|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range run.ControlPlane {
			fmt.Fprintf(b, "| %d | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB |\n", c.N, inMiB(c.APIServerPeakRSS), inMiB(c.APIServerRSS),
				inMiB(c.EtcdPeakRSS), inMiB(c.EtcdRSS), inMiB(c.EtcdDB))
		}
	}
}
