package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// previousRelease is the commit of the last chart version the CHANGELOG
// tags (0.1.0, 2026-11-21): what users upgrade from.
const previousRelease = "110915f"

// upgradeFromPreviousRelease installs the previous release (its chart, its
// image built from its source, its example configuration), lets it label
// the pods, then helm upgrades to this tree's chart and image with the same
// configuration: the chart keeps the field manager 0.1.0 wrote as
// (metawatch), no pod's labels may change (no key lost or flipped), the
// new replicas write to pods at most once each (counted from the API
// server's audit log; a converged cluster needs none), and the Lease goes
// to a new replica, which then follows a Namespace change.
func upgradeFromPreviousRelease(t *testing.T, c *onenode.Cluster, cs kubernetes.Interface, helm string, pods []string) {
	t.Helper()
	src, ok := previousSource(t)
	if !ok {
		return
	}
	if err := c.ImportImage(t.Context(), buildImageFrom(t, src, imageRef(t, "previous"))); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		return run(t, c.Kubectl, append([]string{"--kubeconfig", c.KubeconfigPath, "-n", chartNamespace}, args...)...)
	}
	run(t, helm, "--kubeconfig", c.KubeconfigPath, "install", "metawatch", filepath.Join(src, "deploy/helm/metawatch"), "-n", chartNamespace,
		"--create-namespace", "--set", "image.pullPolicy=Never", "--set", "image.tag=previous")
	kubectl("apply", "-f", filepath.Join(src, "selectors/default.yaml"))
	rolloutOrDump(t, c)
	setTeam(t, cs, "previous-release")
	waitLabel(t, cs, "the previous release to copy team to every pod", pods, "previous-release")

	before := leaseIdentity(t, cs)
	changes := watchLabelChanges(t, cs, "storefront")
	from := time.Now()
	current := imageRef(t, "")
	run(t, helm, "--kubeconfig", c.KubeconfigPath, "upgrade", "metawatch", "../../deploy/helm/metawatch", "-n", chartNamespace,
		"--set", "image.pullPolicy=Never", "--set", "image.tag="+current[strings.LastIndex(current, ":")+1:], "-f", previousKinds(t))
	rolloutOrDump(t, c)
	// 0.1.0 passed no --field-manager: it wrote as the binary's default.
	if got := chartFieldManager(t, cs); got != "metawatch" {
		t.Errorf("after the upgrade from %s --field-manager=%q, want metawatch, the name 0.1.0 wrote as", previousRelease, got)
	}
	testkit.WaitFor(t, "a replica of this release to hold the Lease", 2*time.Minute, func() bool {
		return leaseIdentity(t, cs) != before && podImage(t, cs, leaseHolder(t, cs)) == current
	})
	time.Sleep(10 * time.Second) // the new leader's first pass over every pod has run
	changed := changes()
	writers, perPod, _ := auditedWrites(t, c.AuditLogPath(), from)
	t.Logf("helm upgrade from %s: the Lease went from %s to %s; writes to pods by replica %v, per pod %v; label changes seen: %v",
		previousRelease, before, leaseIdentity(t, cs), writers, perPod, changed)
	if len(changed) > 0 {
		t.Errorf("pods' labels changed during the upgrade (a key lost or flipped): %v", changed)
	}
	for pod, n := range perPod {
		if n > 1 {
			t.Errorf("the upgraded release wrote %s %d times: a converged cluster needs no write, at most one", pod, n)
		}
	}
	setTeam(t, cs, "upgraded")
	waitLabel(t, cs, "the upgraded release to follow a Namespace change", pods, "upgraded")
}

// previousKinds is a values file whose rbac.kinds grant what 0.1.0's
// example configuration watches: 0.1.0's chart granted nodes and
// configmaps by default (rbac.watch), today's grants Namespaces, Pods and
// Deployments only (rbac.kinds), and a leader denied a watched kind is not
// Ready, which holds the rollout (the CHANGELOG's upgrade notes; `metawatch
// check --chart-values` writes this list for any configuration).
func previousKinds(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kinds.yaml")
	values := `rbac:
  kinds:
    - {kind: Namespace, apiGroup: "", resource: namespaces}
    - {kind: Pod, apiGroup: "", resource: pods, write: true}
    - {kind: Deployment, apiGroup: apps, resource: deployments, write: true}
    - {kind: Node, apiGroup: "", resource: nodes}
    - {kind: ConfigMap, apiGroup: "", resource: configmaps}
`
	if err := os.WriteFile(path, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rolloutOrDump waits for the chart's Deployment to roll out; if it does
// not, it fails t with what the pods say: their state, Events and logs.
func rolloutOrDump(t *testing.T, c *onenode.Cluster) {
	t.Helper()
	kubectl := func(args ...string) string {
		out, _ := exec.Command(c.Kubectl, append([]string{"--kubeconfig", c.KubeconfigPath, "-n", chartNamespace}, args...)...).CombinedOutput()
		return string(out)
	}
	out, err := exec.Command(c.Kubectl, "--kubeconfig", c.KubeconfigPath, "-n", chartNamespace, "rollout", "status", "deploy/metawatch", "--timeout=3m").CombinedOutput()
	if err == nil {
		return
	}
	t.Fatalf("rollout: %v\n%s\n%s\n%s\n%s", err, out, kubectl("get", "pods", "-o", "wide"), kubectl("describe", "pods"),
		kubectl("logs", "-l", "app.kubernetes.io/name=metawatch", "--tail=40", "--all-containers", "--prefix"))
}

// previousSource unpacks previousRelease's tree from this repository's
// history; ok is false (and the step skipped, said in the log) where the
// history does not reach it, as in a shallow clone.
func previousSource(t *testing.T) (dir string, ok bool) {
	t.Helper()
	dir = t.TempDir()
	archive := exec.Command("git", "-C", "../..", "archive", "--format=tar", previousRelease)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	archiveErr := archive.Run()
	if err := untar.Wait(); err != nil || archiveErr != nil {
		t.Logf("upgrade from the previous release not tested: this checkout's history lacks %s (%v, %v)", previousRelease, archiveErr, err)
		return "", false
	}
	return dir, true
}

// buildImageFrom builds the metawatch of the tree in src into an image
// tarball named ref (packaged by this tree's hack/image).
func buildImageFrom(t *testing.T, src, ref string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "metawatch")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/metawatch")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the previous release: %v\n%s", err, out)
	}
	tarball := filepath.Join(t.TempDir(), "image.tar")
	run(t, "go", "run", "../image", "--binary", bin, "--ref", ref, "--out", tarball)
	return tarball
}

// watchLabelChanges watches the pods of ns until the returned function is
// called, and returns every change of a pod's labels it saw, by pod.
func watchLabelChanges(t *testing.T, cs kubernetes.Interface, ns string) (stop func() map[string]string) {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]string{}
	for _, p := range list.Items {
		seen[p.Name] = p.Labels
	}
	w, err := cs.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan map[string]string, 1)
	go func() {
		changed := map[string]string{}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Modified {
				continue
			}
			if was := seen[p.Name]; !sameLabels(was, p.Labels) {
				changed[p.Name] = labelsString(was) + " -> " + labelsString(p.Labels)
			}
		}
		out <- changed
	}()
	return func() map[string]string { w.Stop(); return <-out }
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func labelsString(m map[string]string) string {
	return metav1.FormatLabelSelector(metav1.SetAsLabelSelector(m))
}

// podImage is the image of the first container of pod name in the chart's namespace.
func podImage(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	pod, err := cs.CoreV1().Pods(chartNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil || len(pod.Spec.Containers) == 0 {
		return ""
	}
	return pod.Spec.Containers[0].Image
}
