package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The chart, as users install it, on a real kubelet: the image starts with
// the restricted securityContext, in-cluster config through the kubernetes
// Service, the chart's RBAC only; the demo rule converges; deleting the
// leader's pod hands over to the other replica without a key lost; helm
// uninstall takes the admission policies with it; and Stop leaves nothing
// behind.
func TestChartOnARealNode(t *testing.T) {
	skipUnlessANodeCanRun(t)
	ctx := t.Context()
	image := buildImage(t)
	helm, err := controlplane.EnsureHelm(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err := onenode.Start(ctx, onenode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})
	t.Logf("cluster ready in %s", time.Since(start).Round(100*time.Millisecond))
	if err := c.ImportImage(ctx, image); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.Config)

	installed := time.Now()
	// fieldManager as the chart's default was before it derived one per
	// release: the upgrades below render with default values, and must keep
	// it (the Deployment's, by lookup), and the previous release, installed
	// on the same pods after the uninstall, writes as metawatch: under another
	// name the keys this release leaves would be another manager's there.
	run(t, helm, "--kubeconfig", c.KubeconfigPath, "install", "metawatch", "../../deploy/helm/metawatch", "-n", "metawatch-system",
		"--create-namespace", "--set", "image.pullPolicy=Never", "--set", "fieldManager=metawatch")
	run(t, c.Kubectl, "--kubeconfig", c.KubeconfigPath, "apply", "-n", "metawatch-system", "-f", "../../selectors/default.yaml")
	run(t, c.Kubectl, "--kubeconfig", c.KubeconfigPath, "-n", "metawatch-system", "rollout", "status", "deploy/metawatch", "--timeout=3m")
	t.Logf("both replicas Ready %s after helm install", time.Since(installed).Round(100*time.Millisecond))
	t.Logf("\n%s", run(t, c.Kubectl, "--kubeconfig", c.KubeconfigPath, "get", "pods", "-A", "-o", "wide"))
	assertRestricted(t, cs)

	pods := createTeamPods(t, cs, "storefront", 10)
	waitLabel(t, cs, "the rule to copy team to every pod", pods, "storefront")
	scrapeMetrics(t, c, cs)
	badSelectorsKeepPodsReady(t, c, cs)
	assertProbes(t, cs)

	leader := leaseHolder(t, cs)
	watching := watchTeam(t, cs, "storefront")
	deleted := time.Now()
	if err := cs.CoreV1().Pods("metawatch-system").Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "another replica to take the Lease", 2*time.Minute, func() bool { h := leaseHolder(t, cs); return h != "" && h != leader })
	setTeam(t, cs, "checkout")
	lost := watching()
	waitLabel(t, cs, "the new leader to follow a Namespace change", pods, "checkout")
	t.Logf("leader pod deleted: the new leader wrote the Namespace's change %s later", time.Since(deleted).Round(100*time.Millisecond))
	if lost > 0 {
		t.Errorf("%d times a pod was seen without the team label during the failover", lost)
	}

	// After a kill -9 the kubelet restarts the container: the new leader may be
	// that new process, in the same pod, so processes are told apart by the
	// Lease's full holder identity.
	holder := leaseIdentity(t, cs)
	watching = watchTeam(t, cs, "storefront")
	killed := time.Now()
	killProcess(t, cs, leaseHolder(t, cs))
	testkit.WaitFor(t, "another process to take the Lease after a kill -9", 2*time.Minute, func() bool { h := leaseIdentity(t, cs); return h != "" && h != holder })
	setTeam(t, cs, "payments")
	waitLabel(t, cs, "the new leader to follow a Namespace change", pods, "payments")
	t.Logf("leader killed (-9): the new leader wrote the Namespace's change %s later", time.Since(killed).Round(100*time.Millisecond))
	if lost := watching(); lost > 0 {
		t.Errorf("%d times a pod was seen without the team label after the kill", lost)
	}

	rollingUpgrade(t, c, cs, helm, pods)
	atCreationThenUninstall(t, c, cs, helm)
	upgradeFromPreviousRelease(t, c, cs, helm, pods)

	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t)
}

// setTeam sets the team label of the Namespace of the test's pods, storefront.
func setTeam(t *testing.T, cs kubernetes.Interface, team string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Patch(t.Context(), "storefront", "application/merge-patch+json",
		fmt.Appendf(nil, `{"metadata":{"labels":{"team":%q}}}`, team), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// imageRef is the chart's default image, or that image under another tag.
func imageRef(t *testing.T, tag string) string {
	t.Helper()
	chart, err := os.ReadFile("../../deploy/helm/metawatch/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tag == "" {
		tag = string(regexp.MustCompile(`(?m)^appVersion: *"?([^"\n]+)"?`).FindSubmatch(chart)[1])
	}
	return "ghcr.io/metawatch/metawatch:" + tag
}

func buildImage(t *testing.T) string {
	t.Helper()
	return buildImageAs(t, imageRef(t, ""))
}

func buildImageAs(t *testing.T, ref string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "metawatch")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "../../cmd/metawatch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building metawatch: %v\n%s", err, out)
	}
	tarball := filepath.Join(dir, "image.tar")
	run(t, "go", "run", "../image", "--binary", bin, "--ref", ref, "--out", tarball)
	return tarball
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// assertRestricted checks the running pods kept the chart's securityContext.
func assertRestricted(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	list, err := cs.CoreV1().Pods("metawatch-system").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.ChartPodsRestricted(t, list.Items)
}

func createTeamPods(t *testing.T, cs kubernetes.Interface, ns string, n int) []string {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: onenode.PauseImage, ImagePullPolicy: corev1.PullNever}}},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, ns+"/"+pod.Name)
	}
	return names
}

func waitLabel(t *testing.T, cs kubernetes.Interface, what string, pods []string, team string) {
	t.Helper()
	testkit.WaitFor(t, what, 2*time.Minute, func() bool {
		for _, key := range pods {
			ns, name, _ := strings.Cut(key, "/")
			p, err := cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil || p.Labels["team"] != team {
				return false
			}
		}
		return true
	})
}

// watchTeam watches the pods of ns and counts the versions seen without the
// team label, until the returned function is called.
func watchTeam(t *testing.T, cs kubernetes.Interface, ns string) (stop func() int) {
	t.Helper()
	w, err := cs.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lost := make(chan int, 1)
	go func() {
		n := 0
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Labels["team"] == "" {
				n++
			}
		}
		lost <- n
	}()
	return func() int { w.Stop(); return <-lost }
}

// leaseIdentity is the leader's identity: its pod's name, "_", a uuid of its process.
func leaseIdentity(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	lease, err := cs.CoordinationV1().Leases("metawatch-system").Get(t.Context(), "metawatch-leader", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// leaseHolder is the leader's pod.
func leaseHolder(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	pod, _, _ := strings.Cut(leaseIdentity(t, cs), "_")
	return pod
}

// assertNothingLeft checks Stop removed every process, mount, cgroup,
// network namespace and directory the cluster made.
func assertNothingLeft(t *testing.T) {
	t.Helper()
	if left := onenode.Leftovers(); len(left) > 0 {
		t.Errorf("the stopped cluster left behind: %s", strings.Join(left, "; "))
	}
}

// skipUnlessANodeCanRun skips t under go test -short, and where this machine
// cannot run a node (no root, no cgroups), saying why.
func skipUnlessANodeCanRun(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a one-node cluster: not under go test -short")
	}
	if reason := onenode.CannotRun(); reason != "" {
		t.Skip(reason)
	}
}
