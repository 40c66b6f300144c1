package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/variant"
	"github.com/metawatch/metawatch/pkg/sharding"
)

// Modes of the shards scenario, as the report names them.
const (
	shardsServer = "server"
	// The API server's ShardedListAndWatch gate off (the local control plane, restarted so).
	shardsClientGateOff = "client (gate off)"
	// Elsewhere the harness cannot restart the API server: the replicas send
	// no selector, so the server sends them everything, as with the gate off.
	shardsClientNoSelector = "client (no selector sent)"
)

// shards runs the shards scenario at n pods: 1, 2 and 3 sharded metawatch
// replicas at once, filtered by the API server, then on receipt with its
// gate off (the local control plane is restarted with it off, and on again
// after).
func (h *harness) shards(ctx context.Context, n int) error {
	if err := h.shardsMode(ctx, n, shardsServer); err != nil {
		return err
	}
	if !h.o.shardsClientToo {
		return nil
	}
	if h.shardGate == nil {
		return h.shardsMode(ctx, n, shardsClientNoSelector)
	}
	fmt.Fprintln(os.Stderr, "bench: shards: restarting kube-apiserver with ShardedListAndWatch=false")
	if err := h.switchShardGate(ctx, false); err != nil {
		return err
	}
	err := h.shardsMode(ctx, n, shardsClientGateOff)
	fmt.Fprintln(os.Stderr, "bench: shards: restarting kube-apiserver with ShardedListAndWatch=true")
	return errors.Join(err, h.switchShardGate(ctx, true))
}

// switchShardGate restarts the API server with the gate on or off and checks it took.
func (h *harness) switchShardGate(ctx context.Context, on bool) error {
	if err := h.shardGate(on); err != nil {
		return fmt.Errorf("restarting kube-apiserver with ShardedListAndWatch=%t: %w", on, err)
	}
	serverSide, err := sharding.ServerFilters(ctx, kubernetes.NewForConfigOrDie(h.cfg), "default")
	if err == nil && serverSide != on {
		err = fmt.Errorf("kube-apiserver restarted with ShardedListAndWatch=%t filters by shard: %t", on, serverSide)
	}
	return err
}

func (h *harness) shardsMode(ctx context.Context, n int, mode string) error {
	for _, replicas := range h.o.shardReplicas {
		fmt.Fprintf(os.Stderr, "bench: %d pods: shards, %d replicas, %s\n", n, replicas, mode)
		run, err := h.shardRun(ctx, n, replicas, mode)
		h.run.Shards = append(h.run.Shards, run)
		if err != nil {
			return fmt.Errorf("shards, %d replicas, %s: %w", replicas, mode, err)
		}
	}
	return nil
}

// shardRun starts the replicas one after the other (each one's sync alone),
// runs a status-only churn that all of them see at once, then checks that
// between them they cache every pod once. The uids are asked for last: a
// replica's list of them (a million at 1M) would be in its memory figures.
func (h *harness) shardRun(ctx context.Context, n, replicas int, mode string) (report.ShardRun, error) {
	run := report.ShardRun{N: n, Mode: mode}
	var children []*child.Process
	defer func() {
		for _, c := range children {
			_, _ = c.Stop()
		}
	}()
	for i := range replicas {
		shard := variant.Shard{Index: i, Of: replicas, ServerSide: mode == shardsServer}
		c, s, err := child.Start(ctx, h.childOptions(), "metawatch", n, "--shard", fmt.Sprintf("%d/%d", i, replicas),
			fmt.Sprintf("--shard-server-side=%t", shard.ServerSide))
		if err != nil {
			return run, err
		}
		children = append(children, c)
		run.Replicas = append(run.Replicas, report.ShardReplica{Buckets: len(shard.Buckets()), CachedPods: s.Objects, SyncSeconds: s.SyncSeconds,
			SyncBytes: probe.PodBytes(s.ReceivedBytes), SyncEvents: s.Events, RetainedBytes: float64(s.RetainedBytes) / float64(max(s.Objects, 1))})
	}
	if err := h.shardChurn(ctx, children, &run); err != nil {
		return run, err
	}
	return run, checkShares(children, &run)
}

// checkShares counts the pods the replicas cache between them (Union) and
// those more than one caches (Overlap), and fails unless every pod is
// cached once.
func checkShares(children []*child.Process, run *report.ShardRun) error {
	cached := map[string]int{}
	for _, c := range children {
		uids, err := c.PodUIDs()
		if err != nil {
			return err
		}
		for _, uid := range uids {
			cached[uid]++
		}
	}
	run.Union = len(cached)
	for _, k := range cached {
		if k > 1 {
			run.Overlap++
		}
	}
	if run.Union != run.N || run.Overlap != 0 {
		return fmt.Errorf("the replicas cached %d pods between them, %d of them more than once; want all %d, each once", run.Union, run.Overlap, run.N)
	}
	return nil
}

// shardChurn waits the steady window, takes each replica's memory, sends a
// status-only churn to the first namespace's pods and records each
// replica's share of it.
func (h *harness) shardChurn(ctx context.Context, children []*child.Process, run *report.ShardRun) error {
	if err := scenario.Sleep(ctx, h.o.steadyWindow); err != nil {
		return err
	}
	before := make([]child.Snapshot, len(children))
	for i, c := range children {
		s, err := c.Snapshot()
		if err != nil {
			return err
		}
		before[i] = s
		run.Replicas[i].PeakRSS, run.Replicas[i].SteadyRSS, run.Replicas[i].SteadyMemory = s.PeakRSSBytes, s.RSSBytes, s.Memory
	}
	_, updates, err := h.sendChurn(ctx, scenario.ChurnOptions{StatusPerSecond: h.o.statusRate, Duration: h.o.churnDuration})
	if err != nil {
		return err
	}
	run.ChurnSeconds, run.StatusUpdates = h.o.churnDuration.Seconds(), updates
	for i, c := range children {
		after, err := child.QuietSnapshot(c)
		if err != nil {
			return err
		}
		r := &run.Replicas[i]
		r.ChurnBytes, r.ChurnEvents = probe.PodBytes(after.Bytes)-probe.PodBytes(before[i].Bytes), after.Events-before[i].Events
		r.ChurnCPU = after.CPUSeconds - before[i].CPUSeconds
	}
	return nil
}
