package main

import (
	"context"
	"fmt"
	"os"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/scenarios/bill"
	"github.com/metawatch/metawatch/bench/scenarios/churn"
	"github.com/metawatch/metawatch/bench/scenarios/converge"
	"github.com/metawatch/metawatch/bench/scenarios/firehose"
	"github.com/metawatch/metawatch/bench/scenarios/initialsync"
	"github.com/metawatch/metawatch/bench/scenarios/relist"
	"github.com/metawatch/metawatch/bench/variant"
)

// measureVariant runs v in its own process on n pods: sync, then a forced
// relist and (unless it only caches) converge and churn on the first
// namespace, as selected.
func (h *harness) measureVariant(ctx context.Context, v variant.Variant, n int) (report.Result, error) {
	reading, err := bill.Start(ctx, h.billMeter)
	if err != nil {
		return report.Result{}, err
	}
	c, s, err := h.start(ctx, v, n)
	if err != nil {
		return report.Result{}, err
	}
	r := report.Result{Variant: v.Name, Description: v.Description, CacheOnly: v.CacheOnly, Deployed: v.Deployed, N: n,
		Objects: s.Objects, Sync: initialsync.Figures(s)}
	reading.Settled()
	if s.Objects != n {
		_, _ = c.Stop()
		return r, fmt.Errorf("cached %d pods, the cluster has %d", s.Objects, n)
	}
	if err := h.steady(ctx, c, &r); err != nil {
		_, _ = c.Stop()
		return r, err
	}
	if h.o.steadyWindow > 0 {
		reading.Steady()
	}
	if h.o.has("relist") {
		if err := h.relist(ctx, c, v, n, &r); err != nil {
			_, _ = c.Stop()
			return r, err
		}
	}
	if !v.CacheOnly {
		if err := h.scenarios(ctx, c, v, &r); err != nil {
			_, _ = c.Stop()
			return r, err
		}
	}
	if h.o.has("firehose") || reading != nil {
		if err := h.firehose(ctx, c, &r, reading); err != nil {
			_, _ = c.Stop()
			return r, err
		}
	}
	final, err := c.Stop()
	// The kernel's high-water mark (VmHWM) trails the resident set by a few
	// pages (its per-thread counters are folded in lazily): a resident set
	// read earlier can be above it. The peak is at least any of them.
	// The relist scenario reset it: the sync's peak is the one before.
	r.PeakRSSBytes, r.CPUSeconds = max(final.PeakRSSBytes, final.RSSBytes, r.SteadyRSSBytes, r.SyncPeakRSS()), final.CPUSeconds
	r.APIServer = reading.Share()
	return r, err
}

// steady lets the variant run idle for --steady-window after its sync, then
// takes its resident set: what it holds once the sync's garbage is collected
// and returned to the kernel, the figure a container's memory limit is set by.
func (h *harness) steady(ctx context.Context, c child.Measured, r *report.Result) error {
	var err error
	r.SteadyRSSBytes, r.SteadyMemory, err = h.steadySet(ctx, c)
	return err
}

// steadySet is c's resident set after --steady-window idle, and the Go
// runtime's account of it (0 and nil: no window).
func (h *harness) steadySet(ctx context.Context, c child.Measured) (int64, map[string]uint64, error) {
	return initialsync.Steady(ctx, c, h.o.steadyWindow)
}

// start starts v at size n: in a process of its own, or from the chart.
func (h *harness) start(ctx context.Context, v variant.Variant, n int) (child.Measured, child.Synced, error) {
	if v.Deployed {
		return h.startDeployed(ctx, n)
	}
	return child.Start(ctx, h.childOptions(), v.Name, n)
}

func (h *harness) scenarios(ctx context.Context, c child.Measured, v variant.Variant, r *report.Result) error {
	if h.o.has("converge") {
		var err error
		if r.Converge, err = converge.Run(ctx, converge.Setup{Measured: c, Variant: v.Name, Client: h.client, Observer: h.observer}, r.N); err != nil {
			return err
		}
	}
	if h.o.has("churn") {
		return h.churn(ctx, c, r)
	}
	return nil
}

// churn runs the churn scenario (bench/scenarios/churn) on the variant c
// and adds its figures to r.
func (h *harness) churn(ctx context.Context, c child.Measured, r *report.Result) error {
	var err error
	r.Churn, err = churn.Run(ctx, churn.Setup{Measured: c, Sender: h.churnSender(),
		Churn: scenario.ChurnOptions{StatusPerSecond: h.o.statusRate, LabelsPerSecond: h.o.labelRate, Duration: h.o.churnDuration}})
	return err
}

// churnSender sends the churn to the first namespace's pods, by kwok where
// the pods are on its nodes: the churn scenario's, and the shards'.
func (h *harness) churnSender() churn.Sender {
	return churn.Sender{Client: h.client, Observer: h.observer, Kwok: h.kwok}
}

// childOptions are the settings every variant's process is started with.
func (h *harness) childOptions() child.Options {
	return child.Options{Kubeconfig: h.kubeconfig, Concurrency: h.o.concurrency, HeapProfiles: h.o.heapProfiles}
}

// relist runs the relist scenario (bench/scenarios/relist) on the variant c
// at n pods and adds its figures to r: on the local control plane, and a
// variant in a process of ours, only.
func (h *harness) relist(ctx context.Context, c child.Measured, v variant.Variant, n int, r *report.Result) error {
	ch, ok := c.(*child.Process)
	if !ok || h.controlPlane == nil {
		fmt.Fprintf(os.Stderr, "bench: %d pods: %s: no relist (%v)\n", n, v.Name, relist.ErrNotLocal)
		return nil
	}
	var err error
	r.Relist, err = relist.Run(ctx, relist.Setup{Child: ch, ControlPlane: h.controlPlane, Variant: v.Name, SyncPodBytes: syncPodBytes(r),
		SteadyRSSBytes: r.SteadyRSSBytes, Steady: h.steadySet}, n)
	return err
}

// syncPodBytes is the bytes of pod lists and watches the variant received
// in its initial sync.
func syncPodBytes(r *report.Result) float64 {
	var perPod float64
	for key, b := range r.Sync.ReceivedBytesPerObjectByKey {
		if probe.IsPodData(key) {
			perPod += b
		}
	}
	return perPod * float64(r.Objects)
}

// firehose runs the firehose (bench/scenarios/firehose) on the variant c and
// adds its figures to r; with a bill taken, the API server's CPU is read
// over the same window.
func (h *harness) firehose(ctx context.Context, c child.Measured, r *report.Result, reading *bill.Reading) error {
	f, err := firehose.Run(ctx, firehose.Setup{Measured: c, Variant: r.Variant, Client: h.client, Observer: h.observer, Updates: h.firehoseOptions(),
		Window: reading.Firehose}, r.N)
	if err != nil {
		return err
	}
	r.Firehose = f
	return nil
}

// firehoseOptions are the firehose's status-only updates: the variants'
// and, in the bill, the API server's alone.
func (h *harness) firehoseOptions() scenario.ChurnOptions {
	return scenario.ChurnOptions{StatusPerSecond: h.o.firehoseRate, Duration: h.o.firehoseDuration}
}
