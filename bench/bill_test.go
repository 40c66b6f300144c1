package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The bill scenario on a local control plane of the harness's own (the API
// server's process must be on this machine to be read): the reference with
// nothing watching, then each variant's share of the API server, and the
// firehose's bytes per event, all in the report.
func TestHarnessBill(t *testing.T) {
	controlplane.SkipIfShort(t)
	t.Parallel()
	withoutKubeconfig := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") })
	run, out := runBench(t, withoutKubeconfig, "--sizes", "40", "--pods-per-namespace", "20", "--scenarios", "bill",
		"--variants", "metawatch,metadata-cache", "--firehose-duration", "2s", "--firehose-rate", "50", "--steady-window", "1s")
	if a := run.APIServerAlone; len(a) != 1 || a[0].N != 40 || a[0].RSSBytes <= 0 ||
		a[0].FirehoseStatusUpdates == 0 || a[0].FirehoseCPUSeconds <= 0 || a[0].FirehoseSeconds <= 0 {
		t.Errorf("the API server alone: %+v, want one reading at 40 pods: its resident set, idle CPU, and the firehose's updates and CPU", a)
	}
	if len(run.Results) != 2 {
		t.Fatalf("%d results, want metawatch's and metadata-cache's", len(run.Results))
	}
	for _, r := range run.Results {
		s := r.APIServer
		if s == nil || s.RSSBeforeBytes <= 0 || s.StartSeconds <= 0 || s.StartCPUSeconds <= 0 || s.StartPeakRSSBytes < s.RSSBeforeBytes ||
			s.SteadyRSSBytes <= 0 || s.FirehoseSeconds <= 0 || s.FirehoseCPUSeconds <= 0 {
			t.Errorf("%s: the API server's share %+v, want its resident set before, its start's time, CPU and peak (no lower than before), the steady set and the firehose's CPU", r.Variant, s)
		}
		if f := r.Firehose; f == nil || f.StatusUpdates == 0 || f.ReceivedBytes <= 0 {
			t.Errorf("%s: firehose %+v, want status updates sent and the bytes the variant's watch received", r.Variant, f)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## The control plane's bill", "| 40 | metawatch |", "| 40 | metadata-cache |"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// Flags the harness cannot follow stop it before anything starts, naming
// the word and what it takes, instead of being ignored.
func TestBadScenarioFlagsAreRefusedByName(t *testing.T) {
	bin, remove, err := testkit.Build(".", "bench")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	for name, c := range map[string]struct {
		args []string
		want []string
	}{
		"a scenario it does not know": {[]string{"--scenarios", "sync,bil"}, []string{`--scenarios: "bil" is not a scenario`, "fanout,bill"}},
		"a variant it does not have":  {[]string{"--variant-max-pods", "typedcache=100000"}, []string{`--variant-max-pods: "typedcache=100000" is not NAME=PODS`}},
		"pods that are not a number":  {[]string{"--variant-max-pods", "typed-cache=lots"}, []string{`"typed-cache=lots"`, "typed-cache=100000"}},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(bin, c.args...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("bench %q: %v\n%s\nwant exit 2", c.args, err, out)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("bench %q said %s\nwant %q in it", c.args, out, w)
				}
			}
		})
	}
}
