package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/bench/target"
	"github.com/metawatch/metawatch/bench/variant"
	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The chart variant: metawatch installed by helm, as users run it, in pods on
// the --local-cluster node or a kind cluster's. Its figures come from outside, the same way for
// every size: the leader's process on this machine (/proc: CPU, peak RSS) and
// its metrics endpoint (events, reconciles, writes), scraped from inside the
// cluster's network with a token the chart's metrics-reader role allows.

const (
	chartNamespace = "metawatch-bench-chart"
	chartPath      = "deploy/helm/metawatch"
	imageTarball   = "bin/metawatch-image.tar"
	scraperName    = "metawatch-bench-scraper"
)

// deployed is the harness's handle on the chart variant at one size.
type deployed struct {
	h      *harness
	pid    string
	scrape func() (string, error)
}

// chartSetup is done once per run: the image on the node, helm, the
// ServiceAccount the metrics are scraped with.
type chartSetup struct {
	node       target.PodHost
	kubeconfig string
	cs         kubernetes.Interface
	helm       string
	token      string
}

func (h *harness) setUpChart(ctx context.Context) (*chartSetup, error) {
	if h.chart != nil {
		return h.chart, nil
	}
	if h.node == nil {
		return nil, fmt.Errorf("the chart variant runs metawatch in pods on this machine: it needs --local-cluster or --kind (a node to run them on)")
	}
	fmt.Fprintf(os.Stderr, "bench: chart: building the image (make image) and importing it into the node\n")
	if out, err := exec.CommandContext(ctx, "make", "image").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("make image: %w\n%s", err, out)
	}
	if err := h.node.ImportImage(ctx, imageTarball); err != nil {
		return nil, err
	}
	helm, err := controlplane.EnsureHelm(ctx, os.Stderr)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(h.cfg)
	if err != nil {
		return nil, err
	}
	// A ServiceAccount bound to the chart's metrics-reader role, as a user's scraper gets it.
	token, err := onenode.ServiceAccountToken(ctx, cs, "default", scraperName, "metawatch-metrics-reader", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	h.chart = &chartSetup{node: h.node, kubeconfig: h.kubeconfig, cs: cs, helm: helm, token: token}
	return h.chart, nil
}

// startDeployed installs the chart (and the bench's selectors ConfigMap) and
// measures it like a child's sync: from helm install to its leader Ready,
// then until it has been handed every pod and made no reconcile for 2 s.
func (h *harness) startDeployed(ctx context.Context, n int) (*deployed, child.Synced, error) {
	setup, err := h.setUpChart(ctx)
	if err != nil {
		return nil, child.Synced{}, err
	}
	if err := applySelectors(ctx, setup.cs, variant.Config(h.spec())); err != nil {
		return nil, child.Synced{}, err
	}
	start := time.Now()
	// fieldManager: the name every variant writes as. The variants share the
	// pods, and each converge sets a new value: a key the chart had left
	// owned by its per-release name would be a conflict the next variant yields.
	if out, err := setup.helmCmd(ctx, "install", "metawatch", chartPath, "--set", "image.pullPolicy=Never",
		"--set", "fieldManager="+authority.DefaultFieldManager).CombinedOutput(); err != nil {
		return nil, child.Synced{}, fmt.Errorf("helm install: %w\n%s", err, out)
	}
	leader, err := waitLeaderReady(ctx, setup.cs)
	if err != nil {
		return nil, child.Synced{}, err
	}
	s := child.Synced{SyncSeconds: time.Since(start).Seconds()}
	s.ReadySeconds = s.SyncSeconds // helm install to the leader Ready is both
	pid, err := onenode.PodProcess(leader.UID, "/metawatch")
	if err != nil {
		return nil, child.Synced{}, err
	}
	d := &deployed{h: h, pid: strconv.Itoa(pid), scrape: setup.scraper(leader.Status.PodIP)}
	s.SyncCPUSeconds = probe.CPUSecondsOf(d.pid) // the process started after helm install: all of it is start and sync
	if err := d.settle(ctx, n); err != nil {
		return nil, child.Synced{}, err
	}
	m, err := d.metrics()
	if err != nil {
		return nil, child.Synced{}, err
	}
	s.Objects = int(m.Sum("metawatch_cached_objects", "kind", "Pod"))
	s.Events, s.Reconciles = received(m), int64(m.Sum("controller_runtime_reconcile_total", "", ""))
	return d, s, nil
}

func (h *harness) spec() variant.Spec {
	return variant.Spec{Selector: seed.Selector, Label: costCenter, Concurrency: h.o.concurrency}
}

// refuseAnotherInstallation fails when metawatch's chart is installed outside
// the bench's namespace: the bench's release would clash with its
// cluster-wide objects (helm refuses them), and it would reconcile the
// bench's pods too, so the figures would not be the bench's installation's alone.
func refuseAnotherInstallation(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deployments, err := cs.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=metawatch"})
	if err != nil {
		return fmt.Errorf("looking for another metawatch installation: %w", err)
	}
	for _, d := range deployments.Items {
		if d.Namespace == chartNamespace {
			continue // the bench's own
		}
		release := d.Labels["app.kubernetes.io/instance"]
		return fmt.Errorf("the chart variant installs metawatch in namespace %s, and metawatch is installed already in namespace %s (helm release %q): "+
			"its cluster-wide objects would clash with the bench's and it would reconcile the bench's pods too; "+
			"uninstall it first (helm uninstall %s -n %s), or leave the chart variant out of --variants", chartNamespace, d.Namespace, release, release, d.Namespace)
	}
	return nil
}

func (c *chartSetup) helmCmd(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, c.helm, append([]string{"--kubeconfig", c.kubeconfig, "-n", chartNamespace}, args...)...)
}

// settle waits until the leader has been handed n pods and made no
// reconcile for two seconds, as a child's settle does.
func (d *deployed) settle(ctx context.Context, n int) error {
	last, quietSince := -1.0, time.Now()
	for deadline := time.Now().Add(child.SettleTimeout); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := d.metrics()
		if err != nil {
			continue // the metrics server may start after readiness
		}
		reconciles := m.Sum("controller_runtime_reconcile_total", "", "")
		if reconciles != last {
			last, quietSince = reconciles, time.Now()
		} else if m.Sum("metawatch_events_total", "kind", "Pod") >= float64(n) && time.Since(quietSince) > 2*time.Second {
			return nil
		}
	}
	return fmt.Errorf("the chart's leader did not settle on %d pods within %s", n, child.SettleTimeout)
}

// Snapshot reads the leader's metrics and its process.
func (d *deployed) Snapshot() (child.Snapshot, error) {
	m, err := d.metrics()
	if err != nil {
		return child.Snapshot{}, err
	}
	return child.Snapshot{Events: received(m), Reconciles: int64(m.Sum("controller_runtime_reconcile_total", "", "")),
		Requests:   map[string]int64{"PATCH pods (metawatch_rule_writes_total)": int64(m.Sum("metawatch_rule_writes_total", "", ""))},
		CPUSeconds: probe.CPUSecondsOf(d.pid), PeakRSSBytes: probe.PeakRSSOf(d.pid), RSSBytes: probe.RSSOf(d.pid)}, nil
}

// Stop takes a last snapshot and uninstalls the chart, waiting for its pods
// to go: the next size starts from nothing, as a child process does.
func (d *deployed) Stop() (child.Snapshot, error) {
	s, err := d.Snapshot()
	setup := d.h.chart
	ctx := context.Background()
	if out, uerr := setup.helmCmd(ctx, "uninstall", "metawatch", "--wait", "--timeout", "5m").CombinedOutput(); uerr != nil && err == nil {
		err = fmt.Errorf("helm uninstall: %w\n%s", uerr, out)
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		pods, lerr := setup.cs.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{})
		if lerr == nil && len(pods.Items) == 0 {
			break
		}
	}
	return s, err
}

// waitLeaderReady waits for a replica to hold the chart's Lease and for its
// pod to be Ready, and returns that pod.
func waitLeaderReady(ctx context.Context, cs kubernetes.Interface) (*corev1.Pod, error) {
	for deadline := time.Now().Add(child.SettleTimeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lease, err := cs.CoordinationV1().Leases(chartNamespace).Get(ctx, "metawatch-leader", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			continue
		}
		name, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
		pod, err := cs.CoreV1().Pods(chartNamespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && onenode.PodReady(pod) && pod.Status.PodIP != "" {
			return pod, nil
		}
	}
	return nil, fmt.Errorf("no replica of the chart became leader and Ready within %s", child.SettleTimeout)
}

// applySelectors writes the bench's configuration into the chart's selectors
// ConfigMap, creating the namespace first.
func applySelectors(ctx context.Context, cs kubernetes.Interface, conf string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "metawatch-selectors", Namespace: chartNamespace},
		Data: map[string]string{"config.yaml": conf}}
	_, err := cs.CoreV1().ConfigMaps(chartNamespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cs.CoreV1().ConfigMaps(chartNamespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	return err
}

// scraper returns a function that reads the metrics of the pod at podIP,
// connecting from inside the cluster's network over one kept-alive
// connection (a new TLS handshake per scrape would cost the measured process).
func (c *chartSetup) scraper(podIP string) func() (string, error) {
	client, url := c.node.HTTPClient(), "https://"+podIP+":8443/metrics"
	return func() (string, error) {
		code, body, err := testkit.Get(context.Background(), client, url, c.token, false)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET %s: %d: %.200s", url, code, body)
		}
		return string(body), err
	}
}

func (d *deployed) metrics() (probe.Exposition, error) {
	text, err := d.scrape()
	if err != nil {
		return nil, err
	}
	return probe.ParseExposition(text)
}

// received is the watch events the leader received: delivered to its
// informers, or left out as unchanged before decoding.
func received(e probe.Exposition) int64 {
	return int64(e.Sum("metawatch_events_total", "", "") + e.Sum("metawatch_watch_events_unchanged_total", "", ""))
}
