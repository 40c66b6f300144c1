package scenario

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/seed"
)

// Probe intervals: a client reading one pod ten times a second, and another
// writer patching a ConfigMap five times a second, on the same API server.
const (
	probeGetEvery   = 100 * time.Millisecond
	probePatchEvery = 200 * time.Millisecond
	// probeTimeout bounds one probe request: a request that takes longer is
	// counted as an error, at this latency.
	probeTimeout = 30 * time.Second
)

// ProbeConfigMap is the ConfigMap the other writer patches, in namespace
// default: not in a bench namespace, whose objects the etcd seeding copies
// into every other. Probes.Close deletes it.
const ProbeConfigMap = "metawatch-bench-fanout-probe"

// Probes are two clients of the API server beside whatever runs: one GETs
// a pod, the other merge-patches an annotation of a ConfigMap, each on a
// connection of its own (neither shares the harness's, nor each other's,
// HTTP/2 connection, whose other streams would delay them on this side).
type Probes struct {
	get, patch client.Client
	pod        client.ObjectKey
	configMap  client.ObjectKey
}

// ProbeLatencies are one run of the probes.
type ProbeLatencies struct {
	Get, Patch             []time.Duration
	GetErrors, PatchErrors int
}

// NewProbes makes the probes' clients, and the ConfigMap the writer patches
// if it is missing. pod is the pod the reader GETs.
func NewProbes(ctx context.Context, cfg *rest.Config, pod client.ObjectKey) (*Probes, error) {
	p := &Probes{pod: pod, configMap: client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: ProbeConfigMap}}
	var err error
	if p.get, err = ownConnection(cfg); err != nil {
		return nil, err
	}
	if p.patch, err = ownConnection(cfg); err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.configMap.Namespace, Name: p.configMap.Name,
		Labels: map[string]string{seed.BenchLabel: "true"}}}
	if err := p.patch.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the probe's ConfigMap: %w", err)
	}
	return p, nil
}

// Close deletes the ConfigMap the other writer patches.
func (p *Probes) Close(ctx context.Context) error {
	err := p.patch.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.configMap.Namespace, Name: p.configMap.Name}})
	return client.IgnoreNotFound(err)
}

// ownConnection is an unthrottled client of cfg with a transport of its
// own: a config with a Dial function is never taken from client-go's cache
// of transports, so its connection is its own.
func ownConnection(cfg *rest.Config) (client.Client, error) {
	own := rest.CopyConfig(cfg)
	own.QPS, own.Burst = -1, 0
	own.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return client.New(own, client.Options{})
}

// Run sends the probes until ctx ends, each request at its own tick (a slow
// answer does not hold back the next request, so a loaded server cannot
// hide its latency by slowing the probe), and returns their latencies.
func (p *Probes) Run(ctx context.Context) ProbeLatencies {
	var (
		mu  sync.Mutex
		out ProbeLatencies
		wg  sync.WaitGroup
	)
	record := func(list *[]time.Duration, errs *int, took time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		*list = append(*list, took)
		if err != nil {
			*errs++
		}
	}
	wg.Go(func() {
		tick(ctx, &wg, probeGetEvery, func(rctx context.Context) {
			start := time.Now()
			err := p.get.Get(rctx, p.pod, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}})
			record(&out.Get, &out.GetErrors, time.Since(start), err)
		})
	})
	wg.Go(func() {
		tick(ctx, &wg, probePatchEvery, func(rctx context.Context) {
			start := time.Now()
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"metawatch.dev/bench-probe":%q}}}`, start.Format(time.RFC3339Nano))
			err := p.patch.Patch(rctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.configMap.Namespace, Name: p.configMap.Name}},
				client.RawPatch(types.MergePatchType, patch))
			record(&out.Patch, &out.PatchErrors, time.Since(start), err)
		})
	})
	wg.Wait()
	return out
}

// tick runs send in a goroutine of wg at once and then every interval until
// ctx ends. The request at once means a window shorter than interval (a
// bare client relabels a few dozen pods in less) still has one sample.
// Each request gets probeTimeout, not ctx, so the last ones finish and count.
func tick(ctx context.Context, wg *sync.WaitGroup, interval time.Duration, send func(context.Context)) {
	fire := func() {
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
			defer cancel()
			send(rctx)
		})
	}
	fire()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fire()
		}
	}
}

// Start runs the probes in the background; the function it returns stops
// them and returns their latencies.
func (p *Probes) Start(ctx context.Context) (stop func() ProbeLatencies) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan ProbeLatencies, 1)
	go func() { done <- p.Run(ctx) }()
	return func() ProbeLatencies {
		cancel()
		return <-done
	}
}
