package main_test

import (
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The Lease timings of the failover tests: short, so that the tests are too.
var leaseFlags = []string{"--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "500ms"}

// Two replicas with leader election; a rule is added live after both started
// and converges; the leader is killed (kill -9, then, with the roles swapped,
// SIGTERM). The standby that takes over runs the configuration as it is now,
// not as it read it at its own start-up: no pod ever loses a key the current
// rules want (every version of every pod is watched), and a Namespace label
// change made right after the kill converges. The failover times are logged.
func TestFailoverRunsTheCurrentConfiguration(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "failover", map[string]string{"team": "a"})
	for i := range 10 {
		testkit.Pod(t, c, "failover", fmt.Sprintf("p-%d", i), nil)
	}
	tier := "watches:\n- kind: Pod\n  namespaces: [failover]\nrules:\n- {name: failover-tier, kinds: [Pod], setLabels: {tier: gold}}\n"
	applySelectors(t, c, "failover", tier)
	first := startReplica(t, "failover")
	waitPods(t, c, "failover", "the leader to label every pod", func(l map[string]string) bool { return l["tier"] == "gold" })
	second := startReplica(t, "failover")
	waitHTTP200(t, "http://"+second.probe+"/readyz", second.stderr)

	applySelectors(t, c, "failover", tier+"- name: failover-team\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n")
	waitPods(t, c, "failover", "the live-added rule to converge", func(l map[string]string) bool { return l["team"] == "a" })
	history := watchHistory(t, "failover", func(l map[string]string) bool { return l["tier"] == "gold" && l["team"] != "" })

	for _, step := range []struct {
		how    string
		signal syscall.Signal
		leader *replica
		team   string
	}{{"kill -9", syscall.SIGKILL, first, "b"}, {"SIGTERM", syscall.SIGTERM, second, "c"}} {
		start := time.Now()
		step.leader.stop(t, step.signal)
		patchNamespace(t, c, "failover", step.team)
		waitPods(t, c, "failover", "the standby to converge the namespace change after "+step.how, func(l map[string]string) bool { return l["team"] == step.team })
		t.Logf("failover after %s of the leader (lease 4s, renew 3s, retry 500ms): the namespace change reached all 10 pods in %s",
			step.how, time.Since(start).Round(10*time.Millisecond))
		if step.how == "kill -9" {
			first = startReplica(t, "failover") // the standby for the SIGTERM step
			waitHTTP200(t, "http://"+first.probe+"/readyz", first.stderr)
		}
	}
	for _, v := range history.violations() {
		t.Errorf("a pod lost a key the current rules want: %s", v)
	}
}

type replica struct {
	cmd    *exec.Cmd
	stderr *testkit.SyncBuffer
	probe  string
	done   chan error
}

// startReplica runs a metawatch replica with leader election on the
// selectors ConfigMap of ns (the Lease in ns too); it is stopped when the test ends.
func startReplica(t *testing.T, ns string) *replica {
	t.Helper()
	r := newReplica(t)
	r.launch(t, nil, append([]string{"--kubeconfig", cp.KubeconfigPath, "--config-map", ns + "/selectors", "--leader-elect",
		"--leader-election-namespace", ns, "--health-probe-bind-address", r.probe, "--metrics-bind-address", "0"}, leaseFlags...)...)
	return r
}

// newReplica is a replica not started yet, with a free probe address.
func newReplica(t *testing.T) *replica {
	return &replica{probe: testkit.FreeAddress(t), done: make(chan error, 1)}
}

// launch starts r's process with args (env added to the test's) and kills it when the test ends.
func (r *replica) launch(t *testing.T, env []string, args ...string) {
	t.Helper()
	r.cmd, r.stderr = startWithEnv(t, env, args...)
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done //nolint:errcheck // killed in cleanup: its exit status says nothing
		r.done <- nil
	})
}

// stop sends sig to the replica and waits for it; after SIGTERM it must exit 0.
func (r *replica) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := <-r.done
	r.done <- err
	if sig == syscall.SIGTERM && err != nil {
		t.Errorf("the leader exited with %v after SIGTERM, want 0:\n%s", err, r.stderr.String())
	}
}

func applySelectors(t *testing.T, c client.Client, ns, configYAML string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "selectors"}}
	patch := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":%q,"name":"selectors"},"data":{"config.yaml":%q}}`, ns, configYAML)
	if err := c.Patch(t.Context(), cm, client.RawPatch(types.ApplyPatchType, []byte(patch)), client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}

func patchNamespace(t *testing.T, c client.Client, ns, team string) {
	t.Helper()
	testkit.MergePatch(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, "kubectl-label", fmt.Sprintf(`{"metadata":{"labels":{"team":%q}}}`, team))
}

func waitPods(t *testing.T, c client.Client, ns, what string, ok func(map[string]string) bool) {
	t.Helper()
	testkit.WaitFor(t, what, testkit.Timeout, func() bool {
		var pods corev1.PodList
		if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if !ok(p.Labels) {
				return false
			}
		}
		return true
	})
}

// history watches every version of the pods of a namespace, from now on, and
// keeps those that fail want.
type history struct {
	mu     sync.Mutex
	failed []string
}

func watchHistory(t *testing.T, ns string, want func(map[string]string) bool) *history {
	t.Helper()
	h := &history{}
	watchPods(t, ns, nil, func(pod *corev1.Pod) {
		if want(pod.Labels) {
			return
		}
		h.mu.Lock()
		h.failed = append(h.failed, fmt.Sprintf("%s at resourceVersion %s: %v", pod.Name, pod.ResourceVersion, pod.Labels))
		h.mu.Unlock()
	})
	return h
}

// watchPods lists the pods of ns, hands them to listed (if not nil), then
// calls each, from a goroutine, with every version of a pod the watch from
// that list sees, deletions left out, until the test ends.
func watchPods(t *testing.T, ns string, listed func([]corev1.Pod), each func(*corev1.Pod)) {
	t.Helper()
	clientset := kubernetes.NewForConfigOrDie(cp.Config)
	pods, err := clientset.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := clientset.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: pods.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if listed != nil {
		listed(pods.Items)
	}
	go func() {
		for e := range w.ResultChan() {
			if pod, ok := e.Object.(*corev1.Pod); ok && e.Type != watch.Deleted {
				each(pod)
			}
		}
	}()
}

func (h *history) violations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.failed...)
}
