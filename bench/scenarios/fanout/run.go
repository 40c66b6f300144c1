package fanout

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
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

// QPS50 is the variant whose writes are held at a fixed 50/s.
const QPS50 = "metawatch-qps50"

// Variants are the names of the scenario's variants, in the order they run:
// its own, none of --variants.
func Variants() []string {
	names := make([]string, len(fanOutVariants))
	for i, v := range fanOutVariants {
		names[i] = v.name
	}
	return names
}

// fanOutVariants are the fanout scenario's variants, in the order they run.
var fanOutVariants = []fanOutVariant{
	{name: "metawatch", flags: func(bool, int) []string { return nil }},
	// As many workers as the bare client: whether metawatch's own
	// concurrency, rather than its write rate, sets the pace.
	{name: "metawatch-bare-workers", flags: func(_ bool, workers int) []string {
		return []string{fmt.Sprintf("--max-concurrent-reconciles=%d", workers)}
	}},
	{name: QPS50, flags: fixedWriteRate50},
	{name: Bare, bare: true},
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

// Setup is what the scenario runs against.
type Setup struct {
	Client     client.Client
	Config     *rest.Config
	Kubeconfig string
	// Every observes every bench namespace's pods, First the first one's
	// (a pod of it is what the probe GETs).
	Every, First *scenario.Observer
	// Namespaces are the bench namespaces relabelled.
	Namespaces []string
	// Bin and ConfigFile are the metawatch binary and its configuration.
	Bin, ConfigFile string
	// Concurrency is the bare client's workers (--concurrency); Idle how
	// long the probes run idle before each fan-out (--fanout-idle).
	Concurrency int
	Idle        time.Duration
	// QPS50MaxPods and VariantMaxPods keep a variant to sizes up to a
	// number of pods (0 and absent: every size).
	QPS50MaxPods   int
	VariantMaxPods map[string]int
	// APIServerCPU starts counting the API server's CPU seconds; the
	// function it returns reads them (nil where they cannot be read).
	APIServerCPU func() func() *float64
	// Record keeps a variant's figures as soon as it has them.
	Record func(Result)
}

// Run is the fanout scenario at n pods: every bench namespace brought to
// one value first, then, per variant in turn, every one relabelled until
// every pod carries the new value, with the probes running.
func Run(ctx context.Context, s Setup, n int) error {
	adaptive := hasAdaptiveWriteRate(ctx, s.Bin)
	pods := s.First.Pods()
	if len(pods) == 0 {
		return fmt.Errorf("no pod in %s for the probe to GET", seed.NamespaceName(0))
	}
	probes, err := scenario.NewProbes(ctx, s.Config, client.ObjectKey{Namespace: seed.NamespaceName(0), Name: pods[0]})
	if err != nil {
		return err
	}
	defer func() { _ = probes.Close(context.WithoutCancel(ctx)) }()
	fmt.Fprintf(os.Stderr, "bench: %d pods: fanout: every pod of the %d bench namespace(s) to one value first (bare client)\n", n, len(s.Namespaces))
	if _, err := scenario.BareFanOut(ctx, s.Client, s.Every, s.Namespaces, fmt.Sprintf("fanout-%d-before", n), s.Concurrency, fanOutTimeout(n)); err != nil {
		return fmt.Errorf("bringing every pod to one value: %w", err)
	}
	for _, v := range fanOutVariants {
		if v.name == QPS50 && s.QPS50MaxPods > 0 && n > s.QPS50MaxPods {
			fmt.Fprintf(os.Stderr, "bench: %d pods: fanout: %s skipped (--fanout-qps50-max-pods %d)\n", n, v.name, s.QPS50MaxPods)
			continue
		}
		if limit, ok := s.VariantMaxPods[v.name]; ok && n > limit {
			fmt.Fprintf(os.Stderr, "bench: %d pods: fanout: %s skipped (--variant-max-pods %s=%d)\n", n, v.name, v.name, limit)
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %d pods: fanout: %s\n", n, v.name)
		f, err := fanOutOnce(ctx, s, v, adaptive, probes, n)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		s.Record(f)
	}
	return nil
}

// fanOutOnce is one variant's fan-out: metawatch started (unless bare) and
// Ready, the probes idle for --fanout-idle, then every namespace relabelled
// with the probes running, until every pod carries the new value.
func fanOutOnce(ctx context.Context, s Setup, v fanOutVariant, adaptive bool, probes *scenario.Probes, n int) (Result, error) {
	f := Result{N: n, Variant: v.name, Namespaces: len(s.Namespaces)}
	var tracer *writeTracer
	if !v.bare {
		f.Flags = v.flags(adaptive, s.Concurrency)
		metrics, err := loopback.FreeAddress()
		if err != nil {
			return f, err
		}
		args := append([]string{"--kubeconfig", s.Kubeconfig, "--config-file", s.ConfigFile, "--metrics-bind-address", metrics, "--metrics-secure=false"}, f.Flags...)
		mw, err := scenario.StartReplica(ctx, "fanout", s.Bin, args)
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
	if err := scenario.Sleep(ctx, s.Idle); err != nil {
		return f, err
	}
	idle := stopIdle()
	cpu := s.APIServerCPU()
	stopDuring := probes.Start(ctx)
	value := fmt.Sprintf("%s-%d", v.name, n)
	var res scenario.FanOutResult
	var err error
	if v.bare {
		res, err = scenario.BareFanOut(ctx, s.Client, s.Every, s.Namespaces, value, s.Concurrency, fanOutTimeout(n))
	} else {
		start := time.Now()
		stopTrace := tracer.start(ctx, start)
		res, err = scenario.FanOut(ctx, s.Client, s.Every, s.Namespaces, value, fanOutTimeout(n))
		f.WriteTrace = stopTrace()
		fillWritten(f.WriteTrace, start, res.Arrivals)
	}
	during := stopDuring()
	if err != nil {
		return f, err
	}
	f.APIServerCPUSeconds = cpu()
	f.Pods, f.Seconds, f.PeakWritesPerSecond = res.Pods, res.Took.Seconds(), res.PeakPerSecond
	f.ProbeGet = ProbeLatency{Idle: NewProbeWindow(millis(idle.Get), idle.GetErrors), During: NewProbeWindow(millis(during.Get), during.GetErrors)}
	f.OtherWriter = ProbeLatency{Idle: NewProbeWindow(millis(idle.Patch), idle.PatchErrors), During: NewProbeWindow(millis(during.Patch), during.PatchErrors)}
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
