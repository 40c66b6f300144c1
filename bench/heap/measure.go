package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/engine"
)

// result is one variant's figures for the pods it cached.
type result struct {
	Variant         string  `json:"variant"`
	Objects         int     `json:"objects"`
	RetainedPerPod  float64 `json:"retainedHeapBytesPerPod"`
	AllocatedPerPod float64 `json:"allocatedBytesPerPodDuringSync"`
	ReceivedPerPod  float64 `json:"receivedBytesPerPod"`
	SyncSeconds     float64 `json:"syncSeconds"`
	PeakRSSBytes    int64   `json:"peakRSSBytes"`
	CPUSeconds      float64 `json:"cpuSeconds"`
}

// measureAndPrint runs in a fresh process: nothing else is on its heap.
func measureAndPrint(ctx context.Context, o options) error {
	v, err := variantNamed(o.variant)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	r, err := measure(ctx, cfg, v, o.namespace)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

func measure(ctx context.Context, cfg *rest.Config, v variant, ns string) (result, error) {
	var received atomic.Int64
	cfg = countBytes(cfg, &received)
	if v.strip {
		cfg = engine.StripManagedFields(cfg) // inside the byte counter: bytes received are the wire's
	}
	cfg.QPS, cfg.Burst = -1, 0
	c, err := cache.New(cfg, v.options(ns))
	if err != nil {
		return result{}, err
	}
	if _, err := c.GetInformer(ctx, v.object, cache.BlockUntilSynced(false)); err != nil {
		return result{}, err
	}
	// The baseline includes the clients, discovery and the empty informer: what
	// is measured is what the objects cost.
	before := heapAfterGC()
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return result{}, fmt.Errorf("cache did not sync")
	}
	synced := time.Since(start)
	after := heapAfterGC()
	n, err := countCached(ctx, c, v)
	if err != nil || n == 0 {
		return result{}, fmt.Errorf("counting cached pods: %d, %v", n, err)
	}
	runtime.KeepAlive(c)
	return result{
		Variant: v.name, Objects: n, SyncSeconds: synced.Seconds(),
		RetainedPerPod:  float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n),
		AllocatedPerPod: float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
		ReceivedPerPod:  float64(received.Load()) / float64(n),
		PeakRSSBytes:    peakRSS(), CPUSeconds: cpuSeconds(),
	}, nil
}

// peakRSS is the process's high-water resident set (VmHWM), 0 where /proc is not.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func heapAfterGC() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// countCached lists the cache without copies; it runs after the heap was measured.
func countCached(ctx context.Context, c cache.Cache, v variant) (int, error) {
	list := v.list()
	if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	return meta.LenList(list), nil
}

// countBytes counts the response bytes every client of cfg reads.
func countBytes(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if resp != nil {
				resp.Body = &countingBody{ReadCloser: resp.Body, n: n}
			}
			return resp, err
		})
	}
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
