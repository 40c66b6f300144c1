package main_test

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Sharded replicas go through a scale 2→3, a rolling restart of the three (a
// new replica Ready, then an old one stopped, as the chart's Deployment does
// it) and a scale 3→2, while the Namespace's label changes every 700 ms, so
// that every replica writes its share of the pods all along. Throughout: no
// pod is written by two replicas at once (their requests, each through its
// own proxy and with its own User-Agent, grouped by pod and time); no pod
// ever loses the label or goes back to an older value; each replica caches
// exactly the pods of the buckets it is assigned and holds those buckets, so
// between them they cache every pod once; the last change reaches every pod.
// And a replica lists the pods and the Namespaces once, when it starts: as
// buckets move, its cache lists only the buckets that came to it.
func TestShardedReplicasScaleAndRollWithoutDoubleWrites(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "scale"
	teamNamespace(t, c, ns, teamValue(0), 60)
	var all []*shardedReplica
	run := func(name string) *shardedReplica {
		r := startShardedReplica(t, ns, name)
		waitHTTP200(t, "http://"+r.probe+"/readyz", r.stderr)
		all = append(all, r)
		return r
	}
	a, b := run("a"), run("b")
	waitPods(t, c, ns, "every pod to get its namespace's team", func(l map[string]string) bool { return l["team"] == teamValue(0) })
	assertShares(t, c, ns, a, b)
	teams := watchTeams(t, ns)
	churn := startChurn(t, c, ns, 700*time.Millisecond)

	t.Log("scale 2→3")
	third := run("c")
	assertShares(t, c, ns, a, b, third)
	t.Log("rolling restart of 3")
	live := []*shardedReplica{a, b, third}
	for i, old := range live {
		live[i] = run(old.name + "-2")
		old.stop(t, syscall.SIGTERM)
		assertShares(t, c, ns, live...)
	}
	t.Log("scale 3→2")
	live[2].stop(t, syscall.SIGTERM)
	assertShares(t, c, ns, live[:2]...)

	last := churn.end()
	waitPods(t, c, ns, "the last namespace change to reach every pod", func(l map[string]string) bool { return l["team"] == last })
	for _, v := range teams.violations() {
		t.Errorf("a pod's team went wrong: %s", v)
	}
	for i, x := range all {
		writes := x.podWrites(time.Time{})
		full, moves := x.lists()
		t.Logf("replica %s wrote %d pods; full lists (a LIST, or a watch with initial events) %v; lists of buckets that came %v", x.name, len(writes), full, moves)
		if full["pods"] != 1 || full["namespaces"] != 1 {
			t.Errorf("replica %s listed in full %v, want the pods and the Namespaces once each: a move lists only the buckets that came", x.name, full)
		}
		for pod, ws := range writes {
			if ua := ws[0].UserAgent; !strings.Contains(ua, "ring-member/"+x.name) {
				t.Errorf("replica %s wrote pod %s with User-Agent %q, want one naming it (ring-member/%s)", x.name, pod, ua, x.name)
			}
		}
		for _, y := range all[i+1:] {
			assertNoConcurrentWriters(t, x.podWrites(time.Time{}), y.podWrites(time.Time{}))
		}
	}
}

// lists counts, per resource, the requests of the replica that list the
// whole resource (a LIST, or a watch that sends initial events: a watch that
// resumes from a resourceVersion is not one) and those that list the buckets
// that came to it (at an exact resourceVersion, and their next pages). The
// re-read of one object after a stale write (a list by metadata.name) is
// neither.
func (r *shardedReplica) lists() (full, moves map[string]int) {
	full, moves = map[string]int{}, map[string]int{}
	for _, e := range r.proxy.Exchanges() {
		q, err := url.ParseQuery(e.Query)
		resource := path.Base(e.Path)
		if e.Method != http.MethodGet || err != nil || (resource != "pods" && resource != "namespaces" && resource != "configmaps") ||
			q.Get("limit") == "1" || strings.HasPrefix(q.Get("fieldSelector"), "metadata.name=") {
			continue
		}
		switch {
		case q.Get("resourceVersionMatch") == "Exact" || q.Get("continue") != "":
			moves[resource]++
		case q.Get("watch") == "" || q.Get("sendInitialEvents") == "true":
			full[resource]++
		}
	}
	return full, moves
}

// teamValue is the n-th value of the churned label: they sort in the order set.
func teamValue(n int) string { return fmt.Sprintf("v%04d", n) }

// assertShares waits until the ring of replicas is as assigned: every bucket
// Lease names its owner, and each replica says on /metrics that it holds its
// buckets, runs server-side (client-side before 1.36) and caches exactly the
// pods of its buckets (its cache cannot hold another bucket's: the client-side
// check drops them, so equal counts are equal sets); /readyz/configuration
// says the mode. Client-side, each replica of several counts the other
// buckets' pods dropped on the wire, before decoding.
func assertShares(t *testing.T, c client.Client, ns string, replicas ...*shardedReplica) {
	t.Helper()
	names := make([]string, len(replicas))
	for i, r := range replicas {
		names[i] = r.name
	}
	waitBucketsHeldAsAssigned(t, c, ns, names...)
	owners := sharding.Assign(names)
	mode, says := shardingModeOfTheServer()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		buckets, cached := 0, 0
		for b := range sharding.Bucket(sharding.Buckets) {
			if owners[b] == r.name {
				buckets++
			}
		}
		for _, p := range pods.Items {
			if owners[sharding.BucketOf(p.UID)] == r.name {
				cached++
			}
		}
		testkit.WaitFor(t, fmt.Sprintf("replica %s to hold its %d buckets and cache their %d pods", r.name, buckets, cached), testkit.Timeout, func() bool {
			return r.metric("metawatch_buckets_owned") == float64(buckets) && r.metric(`metawatch_cached_objects{kind="Pod"}`) == float64(cached) &&
				r.metric(`metawatch_sharding_mode{mode="`+mode+`"}`) == 1
		})
		if mode == "client" && len(replicas) > 1 {
			testkit.WaitFor(t, fmt.Sprintf("replica %s to count the other buckets' objects dropped on the wire", r.name), testkit.Timeout, func() bool {
				return r.metric(`metawatch_sharding_dropped_objects_total{stage="wire"}`) > 0
			})
		}
		if _, body := testkit.HTTPGet("http://" + r.probe + "/readyz/configuration"); !strings.HasPrefix(body, says) {
			t.Errorf("replica %s: /readyz/configuration = %q, want it to start %q (Kubernetes %s)", r.name, body, says, controlplane.KubernetesVersion)
		}
	}
}

// shardingModeOfTheServer is the mode a replica runs in on the local control
// plane, and how /readyz/configuration starts: server-side from 1.36 (the
// gate on), client-side before, where the server has no shard selector.
func shardingModeOfTheServer() (mode, readiness string) {
	if controlplane.KubernetesMinor < controlplane.ShardedListAndWatchMinor {
		return "client", "ok: sharding client-side"
	}
	return "server", "ok: sharding server-side"
}

// churn sets the Namespace's team label to the next teamValue every period.
type churn struct {
	stop chan struct{}
	last chan string
}

func startChurn(t *testing.T, c client.Client, ns string, period time.Duration) *churn {
	ch := &churn{stop: make(chan struct{}), last: make(chan string, 1)}
	go func() {
		ticker := time.NewTicker(period)
		defer ticker.Stop()
		n := 0
		for {
			select {
			case <-ch.stop:
				ch.last <- teamValue(n)
				return
			case <-ticker.C:
				n++
				patchNamespace(t, c, ns, teamValue(n))
			}
		}
	}()
	return ch
}

// end stops the churn and returns the value it set last.
func (ch *churn) end() string {
	close(ch.stop)
	return <-ch.last
}

// teams watches every version of the pods of a namespace and keeps those
// whose team label is gone or older than one the pod already had.
type teams struct {
	mu     sync.Mutex
	latest map[string]string
	bad    []string
}

func watchTeams(t *testing.T, ns string) *teams {
	t.Helper()
	h := &teams{latest: map[string]string{}}
	watchPods(t, ns, func(pods []corev1.Pod) {
		for _, p := range pods {
			h.latest[p.Name] = p.Labels["team"]
		}
	}, h.see)
	return h
}

func (h *teams) see(pod *corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	team, before := pod.Labels["team"], h.latest[pod.Name]
	switch {
	case team == "":
		h.bad = append(h.bad, fmt.Sprintf("%s lost it at resourceVersion %s", pod.Name, pod.ResourceVersion))
	case team < before:
		h.bad = append(h.bad, fmt.Sprintf("%s went back from %s to %s at resourceVersion %s", pod.Name, before, team, pod.ResourceVersion))
	}
	h.latest[pod.Name] = max(team, before)
}

func (h *teams) violations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.bad)
}

// One of three sharded replicas is killed (-9), six times over, each time
// right before a Namespace label change: the survivors take its buckets once
// its Lease has expired (4 s here) and the change reaches every pod; no pod
// loses the label or goes back meanwhile. The time from the kill until every
// pod has the new value is logged, p50 and p99 (the slowest of six).
func TestShardedFailoverAfterKill(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "shard-failover"
	teamNamespace(t, c, ns, teamValue(0), 30)
	replicas := make([]*shardedReplica, 3)
	for i := range replicas {
		replicas[i] = startShardedReplica(t, ns, fmt.Sprintf("r%d", i))
	}
	waitPods(t, c, ns, "every pod to get its namespace's team", func(l map[string]string) bool { return l["team"] == teamValue(0) })
	assertShares(t, c, ns, replicas...)
	teams := watchTeams(t, ns)
	var took []time.Duration
	for run := 1; run <= 6; run++ {
		victim := run % len(replicas)
		killed := time.Now()
		replicas[victim].stop(t, syscall.SIGKILL)
		patchNamespace(t, c, ns, teamValue(run))
		waitPods(t, c, ns, fmt.Sprintf("run %d: the change to reach every pod after the kill of %s", run, replicas[victim].name),
			func(l map[string]string) bool { return l["team"] == teamValue(run) })
		took = append(took, time.Since(killed))
		replicas[victim] = startShardedReplica(t, ns, fmt.Sprintf("r%d-%d", victim, run))
		assertShares(t, c, ns, replicas...)
	}
	slices.Sort(took)
	t.Logf("kill -9 of one of three sharded replicas (lease 4s, renew 3s, retry 500ms), 6 runs: the change reached every pod in p50 %s, p99 %s (all: %v)",
		took[len(took)/2].Round(10*time.Millisecond), took[len(took)-1].Round(10*time.Millisecond), took)
	for _, v := range teams.violations() {
		t.Errorf("a pod's team went wrong: %s", v)
	}
}
