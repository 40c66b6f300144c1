package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/bench/variant"
	"github.com/metawatch/metawatch/pkg/testing/loopback"
)

// fanOutVariant is one way the fan-out's writes are made: the metawatch
// binary with flags, or the harness itself (bare).
type fanOutVariant struct {
	name string
	bare bool
	// flags are the metawatch flags it runs with, given whether the binary
	// has the adaptive write rate (--write-rate-min, --write-rate-max) and
	// the bare client's workers (--concurrency).
	flags func(adaptiveWriteRate bool, workers int) []string
}

// qps50 is the variant whose writes are held at a fixed 50/s.
const qps50 = "metawatch-qps50"

// fanOutVariants are the fanout scenario's variants, in the order they run.
var fanOutVariants = []fanOutVariant{
	{name: "metawatch", flags: func(bool, int) []string { return nil }},
	// As many workers as the bare client: whether metawatch's own
	// concurrency, rather than its write rate, sets the pace.
	{name: "metawatch-bare-workers", flags: func(_ bool, workers int) []string {
		return []string{fmt.Sprintf("--max-concurrent-reconciles=%d", workers)}
	}},
	{name: qps50, flags: fixedWriteRate50},
	{name: report.BareFanOut, bare: true},
}

// fixedWriteRate50 are the flags that hold metawatch's writes at 50 a second.
func fixedWriteRate50(adaptiveWriteRate bool, _ int) []string {
	if adaptiveWriteRate {
		// The adaptive write rate (issue 44, item 1) with its floor and ceiling
		// both at 50: the write rate fixed, reads on their own budget.
		return []string{"--write-rate-min=50", "--write-rate-max=50"}
	}
	// Before it: every request, writes included, passes the client's one rate limiter.
	return []string{"--kube-api-qps=50", "--kube-api-burst=100"}
}

// hasAdaptiveWriteRate reports whether the metawatch binary at bin has the
// adaptive write rate: whether its --help names --write-rate-max.
func hasAdaptiveWriteRate(ctx context.Context, bin string) bool {
	out, _ := exec.CommandContext(ctx, bin, "--help").CombinedOutput() // --help may exit non-zero
	return strings.Contains(string(out), "-write-rate-max")
}

// fanOutTimeout bounds one fan-out at n pods: at 25 writes a second, half
// of the default rate, plus half an hour.
func fanOutTimeout(n int) time.Duration {
	return 30*time.Minute + time.Duration(n/25)*time.Second
}

// fanout is the fanout scenario at n pods: every bench namespace brought to
// one value first, then, per variant in turn, every one relabelled until
// every pod carries the new value, with the probes running.
func (h *harness) fanout(ctx context.Context, n int) error {
	if err := h.observeEveryNamespace(ctx); err != nil {
		return err
	}
	if err := h.everyNamespace.WaitPods(ctx, n, 10*time.Minute); err != nil {
		return err
	}
	namespaces, err := h.benchNamespaces(ctx)
	if err != nil {
		return err
	}
	bin, conf, remove, err := buildMetawatch(variant.Config(h.spec()))
	if err != nil {
		return err
	}
	defer remove()
	adaptive := hasAdaptiveWriteRate(ctx, bin)
	pods := h.observer.Pods()
	if len(pods) == 0 {
		return fmt.Errorf("no pod in %s for the probe to GET", seed.NamespaceName(0))
	}
	probes, err := scenario.NewProbes(ctx, h.cfg, client.ObjectKey{Namespace: seed.NamespaceName(0), Name: pods[0]})
	if err != nil {
		return err
	}
	defer func() { _ = probes.Close(context.WithoutCancel(ctx)) }()
	fmt.Fprintf(os.Stderr, "bench: %d pods: fanout: every pod of the %d bench namespace(s) to one value first (bare client)\n", n, len(namespaces))
	if _, err := scenario.BareFanOut(ctx, h.client, h.everyNamespace, namespaces, fmt.Sprintf("fanout-%d-before", n), h.o.concurrency, fanOutTimeout(n)); err != nil {
		return fmt.Errorf("bringing every pod to one value: %w", err)
	}
	for _, v := range fanOutVariants {
		if v.name == qps50 && h.o.fanOutQPS50MaxPods > 0 && n > h.o.fanOutQPS50MaxPods {
			fmt.Fprintf(os.Stderr, "bench: %d pods: fanout: %s skipped (--fanout-qps50-max-pods %d)\n", n, v.name, h.o.fanOutQPS50MaxPods)
			continue
		}
		if limit, ok := h.o.variantMaxPods[v.name]; ok && n > limit {
			fmt.Fprintf(os.Stderr, "bench: %d pods: fanout: %s skipped (--variant-max-pods %s=%d)\n", n, v.name, v.name, limit)
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %d pods: fanout: %s\n", n, v.name)
		f, err := h.fanOutOnce(ctx, v, bin, conf, adaptive, namespaces, probes, n)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		h.run.FanOuts = append(h.run.FanOuts, f)
		h.save()
	}
	return nil
}

// observeEveryNamespace starts the observer of every namespace's pods, once.
func (h *harness) observeEveryNamespace(ctx context.Context) error {
	if h.everyNamespace != nil {
		return nil
	}
	var err error
	h.everyNamespace, err = scenario.Observe(ctx, h.cfg, metav1.NamespaceAll, seed.Selector, costCenter)
	return err
}

// benchNamespaces are the names of the namespaces the harness seeded.
func (h *harness) benchNamespaces(ctx context.Context) ([]string, error) {
	var list corev1.NamespaceList
	if err := h.client.List(ctx, &list, client.HasLabels{seed.BenchLabel}); err != nil {
		return nil, err
	}
	names := make([]string, len(list.Items))
	for i, ns := range list.Items {
		names[i] = ns.Name
	}
	return names, nil
}

// fanOutOnce is one variant's fan-out: metawatch started (unless bare) and
// Ready, the probes idle for --fanout-idle, then every namespace relabelled
// with the probes running, until every pod carries the new value.
func (h *harness) fanOutOnce(ctx context.Context, v fanOutVariant, bin, conf string, adaptive bool, namespaces []string, probes *scenario.Probes, n int) (report.FanOut, error) {
	f := report.FanOut{N: n, Variant: v.name, Namespaces: len(namespaces)}
	var tracer *writeTracer
	if !v.bare {
		f.Flags = v.flags(adaptive, h.o.concurrency)
		metrics, err := loopback.FreeAddress()
		if err != nil {
			return f, err
		}
		args := append([]string{"--kubeconfig", h.kubeconfig, "--config-file", conf, "--metrics-bind-address", metrics, "--metrics-secure=false"}, f.Flags...)
		mw, err := scenario.StartReplica(ctx, "fanout", bin, args)
		if err != nil {
			return f, err
		}
		defer mw.Stop()
		if _, err := mw.WaitReady(ctx, 15*time.Minute); err != nil {
			return f, fmt.Errorf("metawatch: %w", err)
		}
		tracer = newWriteTracer(metrics)
	}
	stopIdle := probes.Start(ctx)
	if err := scenario.Sleep(ctx, h.o.fanOutIdle); err != nil {
		return f, err
	}
	idle := stopIdle()
	cpu := h.apiServerMeter("fanout").cpuSince()
	stopDuring := probes.Start(ctx)
	value := fmt.Sprintf("%s-%d", v.name, n)
	var res scenario.FanOutResult
	var err error
	if v.bare {
		res, err = scenario.BareFanOut(ctx, h.client, h.everyNamespace, namespaces, value, h.o.concurrency, fanOutTimeout(n))
	} else {
		start := time.Now()
		stopTrace := tracer.start(ctx, start)
		res, err = scenario.FanOut(ctx, h.client, h.everyNamespace, namespaces, value, fanOutTimeout(n))
		f.WriteTrace = stopTrace()
		fillWritten(f.WriteTrace, start, res.Arrivals)
	}
	during := stopDuring()
	if err != nil {
		return f, err
	}
	f.APIServerCPUSeconds = cpu()
	f.Pods, f.Seconds, f.PeakWritesPerSecond = res.Pods, res.Took.Seconds(), res.PeakPerSecond
	f.ProbeGet = report.ProbeLatency{Idle: report.NewProbeWindow(millis(idle.Get), idle.GetErrors), During: report.NewProbeWindow(millis(during.Get), during.GetErrors)}
	f.OtherWriter = report.ProbeLatency{Idle: report.NewProbeWindow(millis(idle.Patch), idle.PatchErrors), During: report.NewProbeWindow(millis(during.Patch), during.PatchErrors)}
	fmt.Fprintf(os.Stderr, "bench: %d pods: fanout: %s: %d pods in %.1f s, probe GET p99 %.1f → %.1f ms\n", n, v.name, f.Pods, f.Seconds,
		f.ProbeGet.Idle.P99Millis, f.ProbeGet.During.P99Millis)
	return f, nil
}

// millis are durations in milliseconds.
func millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d.Microseconds()) / 1000
	}
	return out
}
