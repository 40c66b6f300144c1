package helm_test

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// With sharding.enabled, two replicas run out of cluster with the
// Deployment's flags, as the chart's ServiceAccount and with POD_NAME as the
// chart sets it: both get Ready, split the 64 bucket Leases between them,
// say so on /readyz/configuration, label the demo pod and hit nothing
// forbidden; the PodDisruptionBudget keeps one of the two.
func TestShardedInstall(t *testing.T) {
	controlplane.SkipIfShort(t)
	const ns, release = "mw-shard", "mw-shard"
	kubectl(t, "", "create", "namespace", ns)
	kubectl(t, "", "apply", "-n", ns, "-f", repoFile(t, "selectors/default.yaml"))
	helm(t, "install", release, chart, "-n", ns, "--wait=false", "--set", "sharding.enabled=true,replicaCount=2,selectors.name=metawatch-selectors")
	if got := kubectl(t, "", "get", "pdb", "-n", ns, release+"-metawatch", "-o", "jsonpath={.spec.minAvailable}"); got != "1" {
		t.Errorf("the PodDisruptionBudget's minAvailable for 2 sharded replicas = %q, want 1", got)
	}
	args := deploymentArgs(t, ns, release+"-metawatch")
	kubeconfig := impersonatingKubeconfig(t, ns, release+"-metawatch")
	kubectl(t, "", "create", "namespace", "shard-demo")
	kubectl(t, "", "label", "namespace", "shard-demo", "team=checkout")
	kubectl(t, demoPod, "apply", "-n", "shard-demo", "-f", "-")
	for _, pod := range []string{release + "-metawatch-a", release + "-metawatch-b"} {
		probe := testkit.FreeAddress(t)
		cmd := exec.Command(metawatch, append(args, "--kubeconfig", kubeconfig, "--health-probe-bind-address", probe, "--metrics-bind-address", "0")...)
		cmd.Env = append(cmd.Environ(), "POD_NAME="+pod)
		var stderr testkit.SyncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stop(t, cmd, &stderr)
			if strings.Contains(stderr.String(), "is forbidden") {
				t.Errorf("replica %s hit a forbidden request as the chart's ServiceAccount:\n%s", pod, stderr.String())
			}
		})
		testkit.WaitFor(t, "/readyz of "+pod+" as the chart's ServiceAccount:\n"+stderr.String(), testkit.Timeout, func() bool {
			code, body := testkit.HTTPGet("http://" + probe + "/readyz/configuration")
			return code == http.StatusOK && strings.HasPrefix(body, "ok: sharding server-side")
		})
	}
	testkit.WaitFor(t, "the two replicas to hold the 64 bucket Leases between them", testkit.Timeout, func() bool {
		holders := kubectl(t, "", "get", "leases", "-n", ns, "-l", "metawatch.dev/ring="+release+"-metawatch,metawatch.dev/lease=bucket",
			"-o", "jsonpath={range .items[*]}{.spec.holderIdentity}{\"\\n\"}{end}")
		a, b := strings.Count(holders, release+"-metawatch-a\n"), strings.Count(holders, release+"-metawatch-b\n")
		return a > 0 && b > 0 && a+b == 64
	})
	testkit.WaitFor(t, "the copy rule to label the demo pod", testkit.Timeout, func() bool {
		return kubectl(t, "", "get", "pod", "-n", "shard-demo", "web", "-o", "jsonpath={.metadata.labels.team}") == "checkout"
	})
}
