package pace_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/metawatch/metawatch/pkg/authority/pace"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// With the probe, many writers on a free server take the rate well past
// what the writes' own latency let it reach (86 writes/s where an unlimited
// client reached 271, on the bench's server): their latency rises with
// their own concurrency, the probe's does not.
func TestAFastProbeLetsManyWritersClimbPastTheirOwnLatency(t *testing.T) {
	controlplane.SkipIfShort(t)
	admin := testkit.Client(t, cp.Config)
	const ns, objects, workers, past = "pace-probe-free", 200, 32, 250.0
	testkit.Namespace(t, admin, ns, nil)
	configMaps(t, admin, ns, objects)
	probe := timedProbe(t, nil)
	pacer := startPacer(t, pace.RateBounds{Min: 5, Max: 1000, Start: 10}, probe.probe)
	writer, err := client.New(pacer.Config(cp.Config), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	latencyBackoffs := testkit.Metric(t, "metawatch_write_backoffs_total", map[string]string{"reason": "latency"})
	round, peak := 0, 0.0
	testkit.WaitFor(t, fmt.Sprintf("the rate to climb past %g writes/s", past), testkit.Timeout, func() bool {
		round++
		writeAll(t, writer, ns, objects, fmt.Sprint(round), workers)
		peak = max(peak, pacer.Rate())
		return peak > past
	})
	assertLabelled(t, admin, ns, objects, fmt.Sprint(round))
	t.Logf("rate 10 -> %g writes/s (peak %g) after %d rounds of %d writes by %d workers; %g latency backoffs; probe: %s",
		pacer.Rate(), peak, round, objects, workers, testkit.Metric(t, "metawatch_write_backoffs_total", map[string]string{"reason": "latency"})-latencyBackoffs, probe)
	if probeSamples(t) == 0 {
		t.Errorf("metawatch_write_probe_seconds has no sample after %d probes", probe.count())
	}
}

// A probe that slows down (other clients' reads queue) lowers the rate,
// though the writes themselves are answered as fast as before.
func TestASlowProbeLowersTheRateThoughTheWritesAreFast(t *testing.T) {
	controlplane.SkipIfShort(t)
	admin := testkit.Client(t, cp.Config)
	const ns, objects, workers = "pace-probe-slow", 60, 16
	testkit.Namespace(t, admin, ns, nil)
	configMaps(t, admin, ns, objects)
	var slow atomic.Bool
	probe := timedProbe(t, &slow)
	limits := pace.RateBounds{Min: 5, Max: 1000, Start: 20}
	pacer := startPacer(t, limits, probe.probe)
	writer, err := client.New(pacer.Config(cp.Config), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	round := 0
	write := func() { round++; writeAll(t, writer, ns, objects, fmt.Sprint(round), workers) }
	testkit.WaitFor(t, "the rate to climb above its start with the probe fast", testkit.Timeout, func() bool {
		write()
		return pacer.Rate() > limits.Start
	})
	before := testkit.Metric(t, "metawatch_write_backoffs_total", map[string]string{"reason": "latency"})
	climbed := pacer.Rate()
	slow.Store(true)
	testkit.WaitFor(t, "a latency backoff with the probe slow", testkit.Timeout, func() bool {
		write()
		return testkit.Metric(t, "metawatch_write_backoffs_total", map[string]string{"reason": "latency"}) > before && pacer.Rate() < climbed
	})
	assertLabelled(t, admin, ns, objects, fmt.Sprint(round))
	t.Logf("rate %g -> %g writes/s once the probe answered %s late; probe: %s", climbed, pacer.Rate(), probeDelay, probe)
}

// probeDelay is what a slowed probe adds: 20 times an idle GET's few milliseconds.
const probeDelay = 100 * time.Millisecond

// startPacer is a pacer of limits with probe, sending it until the test ends.
func startPacer(t *testing.T, limits pace.RateBounds, probe pace.Probe) *pace.Pacer {
	t.Helper()
	pacer := pace.New(limits, testr.NewWithOptions(t, testr.Options{Verbosity: 1}), probe)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- pacer.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return pacer
}

// probeRecord is a probe of the metadata of Namespace default that
// records its latencies, and answers probeDelay late while slow holds.
type probeRecord struct {
	get  pace.Probe
	slow *atomic.Bool

	mu        sync.Mutex
	latencies []time.Duration
}

func timedProbe(t *testing.T, slow *atomic.Bool) *probeRecord {
	t.Helper()
	get, err := pace.MetadataGet(cp.Config, corev1.SchemeGroupVersion.WithResource("namespaces"), types.NamespacedName{Name: metav1.NamespaceDefault})
	if err != nil {
		t.Fatal(err)
	}
	return &probeRecord{get: get, slow: slow}
}

func (p *probeRecord) probe(ctx context.Context) error {
	start := time.Now()
	err := p.get(ctx)
	if p.slow != nil && p.slow.Load() {
		time.Sleep(probeDelay)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latencies = append(p.latencies, time.Since(start))
	return err
}

func (p *probeRecord) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.latencies)
}

// String is the probe's count, lowest and highest latency.
func (p *probeRecord) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.latencies) == 0 {
		return "no answer"
	}
	lo, hi := p.latencies[0], p.latencies[0]
	for _, l := range p.latencies {
		lo, hi = min(lo, l), max(hi, l)
	}
	return fmt.Sprintf("%d answers, %v to %v", len(p.latencies), lo, hi)
}

// probeSamples is the sample count of metawatch_write_probe_seconds.
func probeSamples(t *testing.T) uint64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "metawatch_write_probe_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}
