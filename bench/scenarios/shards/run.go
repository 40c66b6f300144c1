package shards

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/probe"
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

// Setup is what the scenario runs against.
type Setup struct {
	// Child is what every replica's process is started with.
	Child child.Options
	// Config reaches the API server, to check which way it filters.
	Config *rest.Config
	// ShardGate restarts the API server with ShardedListAndWatch on or off;
	// nil where it is not the harness's.
	ShardGate func(on bool) error
	// Replicas are the numbers of replicas run at once (--shard-replicas);
	// ClientToo runs them again filtered on receipt (--shards-on-receipt).
	Replicas  []int
	ClientToo bool
	// SteadyWindow is how long the replicas run idle before the churn.
	SteadyWindow time.Duration
	// Churn sends the status-only churn of opts to the first namespace's
	// pods and returns the status updates sent (or seen, from kwok).
	Churn     func(context.Context, scenario.ChurnOptions) (int, error)
	ChurnOpts scenario.ChurnOptions
	// Record keeps a run's figures, as soon as it has them.
	Record func(Result)
}

// Run is the shards scenario at n pods: 1, 2 and 3 sharded metawatch
// replicas at once, filtered by the API server, then on receipt with its
// gate off (the local control plane is restarted with it off, and on again
// after).
func Run(ctx context.Context, s Setup, n int) error {
	if err := s.mode(ctx, n, shardsServer); err != nil {
		return err
	}
	if !s.ClientToo {
		return nil
	}
	if s.ShardGate == nil {
		return s.mode(ctx, n, shardsClientNoSelector)
	}
	fmt.Fprintln(os.Stderr, "bench: shards: restarting kube-apiserver with ShardedListAndWatch=false")
	if err := s.switchShardGate(ctx, false); err != nil {
		return err
	}
	err := s.mode(ctx, n, shardsClientGateOff)
	fmt.Fprintln(os.Stderr, "bench: shards: restarting kube-apiserver with ShardedListAndWatch=true")
	return errors.Join(err, s.switchShardGate(ctx, true))
}

// switchShardGate restarts the API server with the gate on or off and checks it took.
func (s Setup) switchShardGate(ctx context.Context, on bool) error {
	if err := s.ShardGate(on); err != nil {
		return fmt.Errorf("restarting kube-apiserver with ShardedListAndWatch=%t: %w", on, err)
	}
	serverSide, err := sharding.ServerFilters(ctx, kubernetes.NewForConfigOrDie(s.Config), "default")
	if err == nil && serverSide != on {
		err = fmt.Errorf("kube-apiserver restarted with ShardedListAndWatch=%t filters by shard: %t", on, serverSide)
	}
	return err
}

func (s Setup) mode(ctx context.Context, n int, mode string) error {
	for _, replicas := range s.Replicas {
		fmt.Fprintf(os.Stderr, "bench: %d pods: shards, %d replicas, %s\n", n, replicas, mode)
		run, err := s.run(ctx, n, replicas, mode)
		s.Record(run)
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
func (s Setup) run(ctx context.Context, n, replicas int, mode string) (Result, error) {
	run := Result{N: n, Mode: mode}
	var children []*child.Process
	defer func() {
		for _, c := range children {
			_, _ = c.Stop()
		}
	}()
	for i := range replicas {
		shard := variant.Shard{Index: i, Of: replicas, ServerSide: mode == shardsServer}
		c, synced, err := child.Start(ctx, s.Child, "metawatch", n, "--shard", fmt.Sprintf("%d/%d", i, replicas),
			fmt.Sprintf("--shard-server-side=%t", shard.ServerSide))
		if err != nil {
			return run, err
		}
		children = append(children, c)
		run.Replicas = append(run.Replicas, Replica{Buckets: len(shard.Buckets()), CachedPods: synced.Objects, SyncSeconds: synced.SyncSeconds,
			SyncBytes: probe.PodBytes(synced.ReceivedBytes), SyncEvents: synced.Events, RetainedBytes: float64(synced.RetainedBytes) / float64(max(synced.Objects, 1))})
	}
	if err := s.churn(ctx, children, &run); err != nil {
		return run, err
	}
	return run, checkShares(children, &run)
}

// checkShares counts the pods the replicas cache between them (Union) and
// those more than one caches (Overlap), and fails unless every pod is
// cached once.
func checkShares(children []*child.Process, run *Result) error {
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
func (s Setup) churn(ctx context.Context, children []*child.Process, run *Result) error {
	if err := scenario.Sleep(ctx, s.SteadyWindow); err != nil {
		return err
	}
	before := make([]child.Snapshot, len(children))
	for i, c := range children {
		snap, err := c.Snapshot()
		if err != nil {
			return err
		}
		before[i] = snap
		run.Replicas[i].PeakRSS, run.Replicas[i].SteadyRSS, run.Replicas[i].SteadyMemory = snap.PeakRSSBytes, snap.RSSBytes, snap.Memory
	}
	updates, err := s.Churn(ctx, s.ChurnOpts)
	if err != nil {
		return err
	}
	run.ChurnSeconds, run.StatusUpdates = s.ChurnOpts.Duration.Seconds(), updates
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
