package main_test

import (
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// shardedReplica is a metawatch process run with --sharding behind a
// recording proxy of its own, so that its writes can be told apart.
type shardedReplica struct {
	*replica
	name    string
	proxy   *testkit.Proxy
	metrics string // host:port of its plain-HTTP /metrics
}

func startShardedReplica(t *testing.T, ns, name string, flags ...string) *shardedReplica {
	t.Helper()
	r := &shardedReplica{replica: newReplica(t), name: name, proxy: testkit.NewProxy(t, cp.Config), metrics: testkit.FreeAddress(t)}
	args := append([]string{"--kubeconfig", r.proxy.Kubeconfig, "--config-map", ns + "/selectors", "--sharding",
		"--leader-election-namespace", ns, "--health-probe-bind-address", r.probe, "--metrics-bind-address", r.metrics, "--metrics-secure=false"}, leaseFlags...)
	r.launch(t, []string{"POD_NAME=" + name}, append(args, flags...)...)
	return r
}

// metric is the value of the sample named exactly series ("name{labels}") on
// the replica's /metrics, or -1 if it has none.
func (r *shardedReplica) metric(series string) float64 {
	_, body := testkit.HTTPGet("http://" + r.metrics + "/metrics")
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}

// podWrites are the replica's PATCH requests to pods sent from since on, by pod name.
func (r *shardedReplica) podWrites(since time.Time) map[string][]testkit.Exchange {
	out := map[string][]testkit.Exchange{}
	for _, e := range r.proxy.Exchanges() {
		if e.Method == http.MethodPatch && strings.Contains(e.Path, "/pods/") && !e.Answered.IsZero() && !e.Received.Before(since) {
			out[path.Base(e.Path)] = append(out[path.Base(e.Path)], e)
		}
	}
	return out
}

// Two replicas with --sharding both write, each its own share of the pods;
// no pod is ever written by both at once; when one is killed (-9), the other
// takes its buckets after the lease expires and a Namespace label change
// reaches every pod; no pod ever loses a key the rules want.
func TestShardedReplicasSplitTheWrites(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "sharded"
	teamNamespace(t, c, ns, "a", 40)
	replicas := []*shardedReplica{startShardedReplica(t, ns, "replica-a"), startShardedReplica(t, ns, "replica-b")}
	for _, r := range replicas {
		waitHTTP200(t, "http://"+r.probe+"/readyz", r.stderr)
	}
	waitPods(t, c, ns, "every pod to get its namespace's team", func(l map[string]string) bool { return l["team"] == "a" })
	waitBucketsHeldAsAssigned(t, c, ns, "replica-a", "replica-b")
	history := watchHistory(t, ns, func(l map[string]string) bool { return l["team"] != "" })
	changed := time.Now()
	patchNamespace(t, c, ns, "b")
	waitPods(t, c, ns, "both replicas to converge the namespace change", func(l map[string]string) bool { return l["team"] == "b" })
	for i, r := range replicas {
		n := len(r.podWrites(changed))
		t.Logf("replica %d wrote %d of the 40 pods for the namespace change", i, n)
		if n == 0 || n == 40 {
			t.Errorf("replica %d wrote %d of the 40 pods, want a share of them (both active):\n%s", i, n, r.stderr.String())
		}
	}

	killed := time.Now()
	replicas[1].stop(t, syscall.SIGKILL)
	patchNamespace(t, c, ns, "c")
	waitPods(t, c, ns, "the survivor to converge the namespace change after the other's kill -9", func(l map[string]string) bool { return l["team"] == "c" })
	t.Logf("kill -9 of one of two sharded replicas (lease 4s, renew 3s, retry 500ms): the namespace change reached all 40 pods in %s",
		time.Since(killed).Round(10*time.Millisecond))

	for _, v := range history.violations() {
		t.Errorf("a pod lost a key the rules want: %s", v)
	}
	assertNoConcurrentWriters(t, replicas[0].podWrites(time.Time{}), replicas[1].podWrites(time.Time{}))

	// A clean stop exits 0 and hands everything on: no bucket Lease names it, its member Lease is gone.
	replicas[0].stop(t, syscall.SIGTERM)
	var leases coordinationv1.LeaseList
	if err := c.List(t.Context(), &leases, client.InNamespace(ns), client.MatchingLabels{sharding.RingLabel: "metawatch"}); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if holder := ptr.Deref(l.Spec.HolderIdentity, ""); holder == "replica-a" {
			t.Errorf("Lease %s still names replica-a after its clean stop", l.Name)
		}
	}
}

// teamNamespace creates namespace ns labelled team, pods p-00 onwards in it,
// and a selectors ConfigMap there whose rule copies team from the Namespace to
// its pods.
func teamNamespace(t *testing.T, c client.Client, ns, team string, pods int) {
	t.Helper()
	testkit.Namespace(t, c, ns, map[string]string{"team": team})
	for i := range pods {
		testkit.Pod(t, c, ns, fmt.Sprintf("p-%02d", i), nil)
	}
	applySelectors(t, c, ns, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%[1]s]\n- kind: Namespace\nrules:\n- name: %[1]s-team\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n", ns))
}

// waitBucketsHeldAsAssigned waits until every bucket Lease of the ring names
// the replica rendezvous hashing gives the bucket among members.
func waitBucketsHeldAsAssigned(t *testing.T, c client.Client, ns string, members ...string) {
	t.Helper()
	owners := sharding.Assign(members)
	testkit.WaitFor(t, fmt.Sprintf("every bucket to be held by its owner among %v", members), testkit.Timeout, func() bool {
		var leases coordinationv1.LeaseList
		if err := c.List(t.Context(), &leases, client.InNamespace(ns), client.MatchingLabels{sharding.RingLabel: "metawatch", sharding.KindLabel: "bucket"}); err != nil {
			return false
		}
		held := 0
		for b := range sharding.Bucket(sharding.Buckets) {
			for _, l := range leases.Items {
				if strings.HasSuffix(l.Name, "-bucket-"+b.String()) && ptr.Deref(l.Spec.HolderIdentity, "") == owners[b] {
					held++
				}
			}
		}
		return held == sharding.Buckets
	})
}

// assertNoConcurrentWriters fails for a pod that both replicas had a write in
// flight to at the same moment (from reaching the proxy to the answer).
func assertNoConcurrentWriters(t *testing.T, a, b map[string][]testkit.Exchange) {
	t.Helper()
	for pod, writesA := range a {
		for _, x := range writesA {
			for _, y := range b[pod] {
				if x.Received.Before(y.Answered) && y.Received.Before(x.Answered) {
					t.Errorf("pod %s: written by both replicas at once (%s-%s and %s-%s)", pod,
						x.Received.Format(time.StampMilli), x.Answered.Format(time.StampMilli), y.Received.Format(time.StampMilli), y.Answered.Format(time.StampMilli))
				}
			}
		}
	}
}

// --sharding and --leader-elect exclude each other: the process says so and exits non-zero.
// Without POD_NAME a sharded replica would name itself after the host, which
// two processes on one host share: it refuses to start, before any request.
func TestShardingWithoutPodNameIsRefused(t *testing.T) {
	controlplane.SkipIfShort(t)
	t.Setenv("POD_NAME", "")
	out, err := runToExit(t, "--kubeconfig", "/nonexistent/kubeconfig", "--config-file", writeConfig(t, "watches:\n- kind: Pod\n"), "--sharding")
	if err == nil || !strings.Contains(out, "--sharding needs the environment variable POD_NAME") {
		t.Errorf("metawatch --sharding without POD_NAME: %v, output:\n%s\nwant a non-zero exit asking for POD_NAME, before the kubeconfig is read", err, out)
	}
}

func TestShardingExcludesLeaderElection(t *testing.T) {
	controlplane.SkipIfShort(t)
	out, err := runToExit(t, "--config-file", writeConfig(t, "watches:\n- kind: Pod\n"), "--sharding", "--leader-elect", "--leader-election-namespace", "default")
	if err == nil || !strings.Contains(out, "--sharding and --leader-elect exclude each other") {
		t.Errorf("metawatch --sharding --leader-elect: %v, output:\n%s\nwant a non-zero exit saying the flags exclude each other", err, out)
	}
}
