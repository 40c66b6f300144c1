package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/scenarios/shards"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// The shards scenario on a local control plane the harness starts itself,
// so that it can restart its API server with the gate off, with pods on
// kwok's nodes (which send the churn's status updates, and reconnect after
// the restarts): for 1, 2 and 3 replicas in both modes, the replicas cache
// every pod once between them and each sees its share of the churn;
// filtered by the server, each of several receives less than a single
// replica does; with the gate off, each receives everything and decodes
// only its share. No size is asserted beyond that: the harness reports them.
func TestHarnessShards(t *testing.T) {
	controlplane.SkipIfShort(t)
	t.Parallel()
	run, out := runBench(t, withoutKubeconfig(), "--sizes", "200", "--pods-per-namespace", "100", "--scenarios", "shards", "--variants", "metawatch",
		"--kwok-nodes", "2", "--churn-duration", "3s", "--churn-status-rate", "20", "--steady-window", "1s")
	if len(run.Shards) != 6 {
		t.Fatalf("%d shard runs, want 1, 2 and 3 replicas in two modes", len(run.Shards))
	}
	for _, s := range run.Shards {
		checkShardRun(t, run, s)
	}
	if page, err := os.ReadFile(filepath.Join(out, "README.md")); err != nil || !strings.Contains(string(page), "## Sharding") {
		t.Errorf("the report has no sharding table (%v)", err)
	}
}

func checkShardRun(t *testing.T, run report.Run, s shards.Result) {
	t.Helper()
	cached, buckets := 0, 0
	for _, r := range s.Replicas {
		cached, buckets = cached+r.CachedPods, buckets+r.Buckets
	}
	if s.Union != s.N || s.Overlap != 0 || cached != s.N || buckets != 64 {
		t.Errorf("%s, %d replicas: %d pods cached (%d distinct, %d in two), %d buckets; want all %d pods once and 64 buckets",
			s.Mode, len(s.Replicas), cached, s.Union, s.Overlap, buckets, s.N)
	}
	var single shards.Replica
	for _, o := range run.Shards {
		if o.Mode == s.Mode && len(o.Replicas) == 1 {
			single = o.Replicas[0]
		}
	}
	for i, r := range s.Replicas {
		if r.ChurnEvents == 0 || r.ChurnBytes == 0 {
			t.Errorf("%s, replica %d of %d saw no event or byte of the status churn (%d status updates)", s.Mode, i, len(s.Replicas), s.StatusUpdates)
		}
		if r.SteadyMemory[probe.LiveHeapMetric] == 0 {
			t.Errorf("%s, replica %d of %d has no account of its steady memory: %v", s.Mode, i, len(s.Replicas), r.SteadyMemory)
		}
	}
	if len(s.Replicas) == 1 {
		return
	}
	for i, r := range s.Replicas {
		switch s.Mode {
		case "server":
			if r.SyncBytes >= single.SyncBytes {
				t.Errorf("server, replica %d of %d received %d bytes at sync, a single replica %d: want less (its share)", i, len(s.Replicas), r.SyncBytes, single.SyncBytes)
			}
		case "client (gate off)":
			if r.SyncBytes < single.SyncBytes*9/10 || r.SyncEvents >= single.SyncEvents {
				t.Errorf("gate off, replica %d of %d received %d bytes and decoded %d events at sync, a single replica %d and %d: want as many bytes, fewer events",
					i, len(s.Replicas), r.SyncBytes, r.SyncEvents, single.SyncBytes, single.SyncEvents)
			}
		default:
			t.Errorf("mode %q, want server or client (gate off)", s.Mode)
		}
	}
}
