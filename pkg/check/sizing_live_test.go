package check_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/check"
	"github.com/metawatch/metawatch/pkg/sizing"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// check --live counts the objects the watches select on the cluster, with
// their selectors and namespaces, and recommends the memory for them as
// the chart's sizing.expectedObjects would set it.
func TestCheckLiveRecommendsTheMemoryForWhatIsWatched(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "sizing-a", nil)
	testkit.Namespace(t, c, "sizing-b", nil)
	for i := range 5 {
		testkit.Pod(t, c, "sizing-a", fmt.Sprintf("web-%d", i), map[string]string{"app": "web"})
	}
	for i := range 3 {
		testkit.Pod(t, c, "sizing-b", fmt.Sprintf("db-%d", i), map[string]string{"app": "db"})
		testkit.Pod(t, c, "sizing-b", fmt.Sprintf("web-%d", i), map[string]string{"app": "web"})
	}
	conf := filepath.Join(t.TempDir(), "config.yaml")
	write(t, conf, "watches:\n- kind: Pod\n  namespaces: [sizing-a, sizing-b]\n  labelSelector: app=web\n"+
		"- kind: Namespace\n  labelSelector: kubernetes.io/metadata.name in (sizing-a,sizing-b)\n")
	var out, errOut bytes.Buffer
	if code := check.Run(t.Context(), []string{"-f", conf, "--live", "--kubeconfig", cp.KubeconfigPath}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d:\n%s%s", code, out.String(), errOut.String())
	}
	want := sizing.For(10)
	line := fmt.Sprintf("sizing: 10 objects watched now (Namespace 2, Pod 8): memory request %s, limit %s (the chart: --set sizing.expectedObjects=10;",
		want.Request(), want.Limit())
	if !strings.Contains(out.String(), line) {
		t.Errorf("the output lacks %q:\n%s", line, out.String())
	}
}
