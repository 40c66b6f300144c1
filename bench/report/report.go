package report

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/metawatch/metawatch/bench/scenarios/bill"
	"github.com/metawatch/metawatch/bench/scenarios/churn"
	"github.com/metawatch/metawatch/bench/scenarios/converge"
	"github.com/metawatch/metawatch/bench/scenarios/failover"
	"github.com/metawatch/metawatch/bench/scenarios/fanout"
	"github.com/metawatch/metawatch/bench/scenarios/firehose"
	"github.com/metawatch/metawatch/bench/scenarios/initialsync"
	"github.com/metawatch/metawatch/bench/scenarios/livereport"
	"github.com/metawatch/metawatch/bench/scenarios/relist"
	"github.com/metawatch/metawatch/bench/scenarios/shards"
)

// Run is one harness run: where it ran, how, and every result.
type Run struct {
	Machine  Machine         `json:"machine"`
	Options  Options         `json:"options"`
	Bare     []converge.Bare `json:"bareClientConverge,omitempty"`
	Results  []Result        `json:"results"`
	Baseline string          `json:"baseline"` // the variant ratios are against
	// Shards are the shards scenario's runs: N sharded replicas at once.
	Shards []shards.Result `json:"shards,omitempty"`
	// LiveReports are the report scenario's runs.
	LiveReports []livereport.Result `json:"liveReports,omitempty"`
	// Seeding is how long each growth of the population took.
	Seeding []Seeding `json:"seeding,omitempty"`
	// Failovers are the failover scenario's runs.
	Failovers []failover.Result `json:"failovers,omitempty"`
	// FanOuts are the fanout scenario's runs: every namespace relabelled, per variant.
	FanOuts []fanout.Result `json:"fanOuts,omitempty"`
	// ControlPlane is what the local kube-apiserver and etcd held at each size.
	ControlPlane []ControlPlaneCost `json:"controlPlane,omitempty"`
	// APIServerAlone is the bill scenario's reference at each size: the API
	// server with no variant watching.
	APIServerAlone []bill.Reference `json:"apiServerAlone,omitempty"`
	// guide is the path from the page's folder to bench/README.md (Write
	// sets it), "" where the page is written outside the repository.
	guide string
}

// ControlPlaneCost is the memory of the local control plane at one size,
// taken after every variant ran: peaks since the API server's last start
// (each etcd copy restarts it) and the resident sets then.
type ControlPlaneCost struct {
	N                int   `json:"n"`
	APIServerPeakRSS int64 `json:"apiServerPeakRSSBytes"`
	APIServerRSS     int64 `json:"apiServerRSSBytes"`
	EtcdPeakRSS      int64 `json:"etcdPeakRSSBytes"`
	EtcdRSS          int64 `json:"etcdRSSBytes"`
	// EtcdDB is the size of etcd's database file.
	EtcdDB int64 `json:"etcdDBBytes,omitempty"`
}

// Seeding is one growth of the population: pods From..To-1, through the
// API (a create and a status update each) or copied into etcd, including
// the API server's restart until it served them.
type Seeding struct {
	From    int     `json:"from"`
	To      int     `json:"to"`
	Via     string  `json:"via"`
	Seconds float64 `json:"seconds"`
}

// Machine describes where the run was made.
type Machine struct {
	Date, OS, Arch, CPU, GoVersion, KubernetesVersion, Target string
	CPUs                                                      int
	MemoryBytes                                               int64
}

// Options are the run's settings.
type Options struct {
	Sizes             []int    `json:"sizes"`
	PerNamespace      int      `json:"podsPerNamespace"`
	Concurrency       int      `json:"concurrency"`
	Scenarios         []string `json:"scenarios"`
	ChurnStatusPerSec float64  `json:"churnStatusUpdatesPerSecond"`
	ChurnLabelsPerSec float64  `json:"churnLabelChangesPerSecond"`
	ChurnSeconds      float64  `json:"churnSeconds"`
	FirehosePerSec    float64  `json:"firehoseStatusUpdatesPerSecond,omitempty"`
	FirehoseSeconds   float64  `json:"firehoseSeconds,omitempty"`
	// LeanPods: pods had one bare container instead of a production-shaped spec (seed.LeanPod).
	LeanPods bool `json:"leanPods,omitempty"`
	// SteadySeconds is how long each variant ran idle after its sync before its steady RSS was taken.
	SteadySeconds float64 `json:"steadySeconds,omitempty"`
	// KwokNodes are the simulated nodes the pods ran on (0: none, the harness wrote their status).
	KwokNodes int `json:"kwokNodes,omitempty"`
	// ReportKubectlMaxPods: the report scenario's kubectl baseline ran only
	// at sizes up to this many pods (0: at every size).
	ReportKubectlMaxPods int `json:"reportKubectlMaxPods,omitempty"`
	// FanOutIdleSeconds is how long the fanout scenario's probes ran idle
	// before each fan-out.
	FanOutIdleSeconds float64 `json:"fanOutIdleSeconds,omitempty"`
	// FanOutQPS50MaxPods: the fanout scenario's metawatch-qps50 variant ran
	// only at sizes up to this many pods (0: at every size).
	FanOutQPS50MaxPods int `json:"fanOutQPS50MaxPods,omitempty"`
	// VariantMaxPods: each variant named ran only at sizes up to its number of pods.
	VariantMaxPods map[string]int `json:"variantMaxPods,omitempty"`
	// Command is the make command line that ran the bench, printed on the
	// page so that a reader can run it again.
	Command string `json:"command,omitempty"`
}

// Result is one variant's figures at one cluster size N (pods in the cluster).
type Result struct {
	Variant     string `json:"variant"`
	Description string `json:"description"`
	CacheOnly   bool   `json:"cacheOnly,omitempty"`
	// Deployed is metawatch from its chart, in pods: measured from outside
	// (its process and metrics), so without heap or wire figures.
	Deployed bool               `json:"deployed,omitempty"`
	N        int                `json:"n"`
	Objects  int                `json:"cachedPods"`
	Sync     initialsync.Result `json:"sync"`
	Converge *converge.Result   `json:"converge,omitempty"`
	Churn    *churn.Result      `json:"churn,omitempty"`
	Firehose *firehose.Result   `json:"firehose,omitempty"`
	// Relist is the relist scenario's: the API server restarted, every pod listed again.
	Relist *relist.Result `json:"relist,omitempty"`
	// PeakRSSBytes and CPUSeconds are the whole process's, at its end
	// (SyncPeakRSS is the initial sync's where a relist came after it).
	PeakRSSBytes int64   `json:"peakRSSBytes"`
	CPUSeconds   float64 `json:"cpuSeconds"`
	// SteadyRSSBytes is the process's resident set after it ran idle for
	// Options.SteadySeconds after its sync (0: not taken).
	SteadyRSSBytes int64 `json:"steadyRSSBytes,omitempty"`
	// SteadyMemory is the Go runtime's account of its memory when
	// SteadyRSSBytes was taken, by runtime/metrics name (see initialsync.MemoryTable).
	SteadyMemory map[string]uint64 `json:"steadyMemoryClasses,omitempty"`
	// APIServer is what the local API server spent while the variant ran
	// (the bill scenario; nil otherwise).
	APIServer *bill.Share `json:"apiServer,omitempty"`
}

// SyncPeakRSS is the peak resident set of the initial sync: the process's
// peak before a relist, where the relist scenario ran, else its whole peak.
func (r Result) SyncPeakRSS() int64 {
	if r.Relist != nil && r.Relist.PeakBeforeRSSBytes > 0 {
		return r.Relist.PeakBeforeRSSBytes
	}
	return r.PeakRSSBytes
}

// largest is the largest size with results (a run that stopped early has fewer than it set out to).
func (run Run) largest() int {
	n := 0
	for _, r := range run.Results {
		n = max(n, r.N)
	}
	return n
}

// Write writes run.json, README.md and the plots into dir.
func Write(dir string, run Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	run.guide = guidePath(dir)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(Markdown(run)+earlierRuns(dir)), 0o644); err != nil {
		return err
	}
	return Plots(dir, run)
}

// guidePath is the relative path from dir to the bench's README.md: dir's
// nearest ancestor that holds bench/README.md is the repository. "" when dir
// is not inside one (a run written to /tmp), where a link would be broken.
func guidePath(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for up := abs; ; up = filepath.Dir(up) {
		guide := filepath.Join(up, "bench", "README.md")
		if _, err := os.Stat(guide); err == nil {
			rel, err := filepath.Rel(abs, guide)
			if err != nil {
				return ""
			}
			return filepath.ToSlash(rel)
		}
		if filepath.Dir(up) == up {
			return ""
		}
	}
}
