package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/metawatch/metawatch/pkg/testkit"

	"github.com/metawatch/metawatch/pkg/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }

// A tiny run of the benchmark, so it keeps working: every variant produces a
// result, caches every seeded pod, and the numbers are self-consistent. No
// timing or size is asserted: that is what the benchmark itself reports.
func TestHeapBenchSmoke(t *testing.T) {
	bin, remove, err := testkit.Build(".", "heap")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	const pods = 40
	cmd := exec.Command(bin, "--kubeconfig", cp.KubeconfigPath, "--pods", "40", "--namespace", "heap-smoke", "--json")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench/heap: %v", err)
	}
	var results []struct {
		Variant                                      string
		Objects                                      int
		RetainedHeapBytesPerPod, ReceivedBytesPerPod float64
		AllocatedBytesPerPodDuringSync, SyncSeconds  float64
		PeakRSSBytes                                 int64
		CPUSeconds                                   float64
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("results: %v\n%s", err, out)
	}
	if len(results) != 6 {
		t.Fatalf("%d results, want one per variant (6): %s", len(results), out)
	}
	for _, r := range results {
		if r.Objects != pods || r.ReceivedBytesPerPod <= 0 || r.AllocatedBytesPerPodDuringSync <= 0 || r.SyncSeconds <= 0 ||
			r.PeakRSSBytes <= 0 || r.CPUSeconds <= 0 {
			t.Errorf("%s: incomplete or inconsistent result %+v (want %d objects and positive figures)", r.Variant, r, pods)
		}
	}
}
