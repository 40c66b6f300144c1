package main

import (
	"bufio"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/hack/onenode"
)

// rollingUpgrade upgrades the release to a new image tag while the
// Namespace's team label flips every second: no pod may be seen without the
// label, and the replicas' writes (from the API server's audit log) must
// never interleave: one writer at a time.
func rollingUpgrade(t *testing.T, c *onenode.Cluster, cs kubernetes.Interface, helm string, pods []string) {
	t.Helper()
	next := imageRef(t, "next")
	if err := c.ImportImage(t.Context(), buildImageAs(t, next)); err != nil {
		t.Fatal(err)
	}
	fieldManager := chartFieldManager(t, cs)
	watching := watchTeam(t, cs, "storefront")
	from := time.Now()
	stopChurn := churnTeam(t, cs, "storefront")
	tag := next[strings.LastIndex(next, ":")+1:]
	run(t, helm, "--kubeconfig", c.KubeconfigPath, "upgrade", "metawatch", "../../deploy/helm/metawatch", "-n", "metawatch-system",
		"--set", "image.pullPolicy=Never", "--set", "image.tag="+tag)
	run(t, c.Kubectl, "--kubeconfig", c.KubeconfigPath, "-n", "metawatch-system", "rollout", "status", "deploy/metawatch", "--timeout=3m")
	if got := chartFieldManager(t, cs); got != fieldManager {
		t.Errorf("the upgrade with default values changed --field-manager from %q to %q: the old name would keep its keys", fieldManager, got)
	}
	time.Sleep(5 * time.Second) // the churn goes on under the new leader too
	last := stopChurn()
	waitLabel(t, cs, "the upgraded replicas to converge", pods, last)
	t.Logf("helm upgrade to %s rolled both replicas in %s under label churn", tag, time.Since(from).Round(100*time.Millisecond))
	if lost := watching(); lost > 0 {
		t.Errorf("%d times a pod was seen without the team label during the upgrade", lost)
	}
	writers, perPod, interleaved := auditedWrites(t, c.AuditLogPath(), from)
	t.Logf("writes to pods during the upgrade, by replica: %v; per pod: %v", writers, perPod)
	if interleaved != "" {
		t.Errorf("two replicas wrote at once: %s", interleaved)
	}
	if len(writers) < 2 {
		t.Logf("only one replica wrote during the upgrade: the handover itself went unseen in the writes")
	}
}

// chartFieldManager is the --field-manager the chart's Deployment passes
// (the last, as the binary reads its flags); "" if none.
func chartFieldManager(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	d, err := cs.AppsV1().Deployments(chartNamespace).Get(t.Context(), "metawatch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	value := ""
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "metawatch" {
			continue
		}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--field-manager="); ok {
				value = v
			}
		}
	}
	return value
}

// churnTeam flips the Namespace's team label between two values every second
// until the returned function is called; it returns the last value set.
func churnTeam(t *testing.T, cs kubernetes.Interface, ns string) (stop func() string) {
	t.Helper()
	done, last := make(chan struct{}), make(chan string, 1)
	go func() {
		values := []string{"blue", "green"}
		current := ""
		for i := 0; ; i++ {
			select {
			case <-done:
				last <- current
				return
			case <-time.After(time.Second):
			}
			v := values[i%2]
			if _, err := cs.CoreV1().Namespaces().Patch(t.Context(), ns, "application/merge-patch+json",
				[]byte(`{"metadata":{"labels":{"team":"`+v+`"}}}`), metav1.PatchOptions{}); err == nil {
				current = v
			}
		}
	}()
	return func() string { close(done); return <-last }
}

type auditEvent struct {
	Verb           string    `json:"verb"`
	Stage          string    `json:"stage"`
	SourceIPs      []string  `json:"sourceIPs"`
	StageTimestamp time.Time `json:"stageTimestamp"`
	User           struct {
		Username string              `json:"username"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	ObjectRef struct {
		Resource, Namespace, Name string
	} `json:"objectRef"`
}

// auditedWrites counts metawatch's writes to pods since from, by replica (the
// pod its ServiceAccount token was bound to: pod IPs are reused) and by pod,
// and says where two replicas' writes interleave.
func auditedWrites(t *testing.T, path string, from time.Time) (byReplica, byPod map[string]int, interleaved string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []auditEvent
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		var e auditEvent
		if json.Unmarshal(s.Bytes(), &e) != nil || e.Stage != "ResponseComplete" || e.ObjectRef.Resource != "pods" ||
			e.User.Username != "system:serviceaccount:metawatch-system:metawatch" || e.StageTimestamp.Before(from) || len(e.SourceIPs) == 0 {
			continue
		}
		events = append(events, e)
	}
	sort.Slice(events, func(i, j int) bool { return events[i].StageTimestamp.Before(events[j].StageTimestamp) })
	byReplica, byPod = map[string]int{}, map[string]int{}
	finished := map[string]bool{}
	current := ""
	for _, e := range events {
		ip := e.SourceIPs[0]
		if pod := e.User.Extra["authentication.kubernetes.io/pod-name"]; len(pod) == 1 {
			ip = pod[0]
		}
		byReplica[ip]++
		byPod[e.ObjectRef.Namespace+"/"+e.ObjectRef.Name]++
		if ip != current {
			if finished[ip] && interleaved == "" {
				interleaved = ip + " wrote again at " + e.StageTimestamp.Format(time.RFC3339Nano) + " after " + current + " had written"
			}
			finished[current] = true
			current = ip
		}
	}
	return byReplica, byPod, interleaved
}

// killProcess kills the metawatch process of pod name with SIGKILL, found on
// the host by the pod's uid in its cgroup.
func killProcess(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	pod, err := cs.CoreV1().Pods(chartNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := onenode.PodProcess(pod.UID, "/metawatch")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}
