package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/bench/variant"
)

// failoverLease is the replicas' --leader-election-lease-duration: the default.
const failoverLease = 15 * time.Second

// failoverModes are the standbys the scenario measures. client-go's elector
// tries to take the Lease every retry period stretched by up to 2.2x (its
// jitter), and counts the lease duration from when it saw the last renewal,
// which it also learns only at such a try: with the default 2 s the first
// write comes 13 to 24 s after the kill whatever the standby has ready, so
// the warm standby is measured with a shorter retry period too.
var failoverModes = []struct {
	name  string
	warm  bool
	retry time.Duration
}{
	{"cold", false, 2 * time.Second},
	{"warm", true, 2 * time.Second},
	{"warm", true, 500 * time.Millisecond},
}

// failover is the failover scenario at n pods: for a cold standby, then a
// warm one (--warm-standby), two metawatch processes with leader election,
// the leader killed once both are Ready, and the time until a pod's label
// removed right after the kill is written back.
func (h *harness) failover(ctx context.Context, n int) error {
	bin, conf, remove, err := buildMetawatch(variant.ReportConfig(h.spec()))
	if err != nil {
		return err
	}
	defer remove()
	for i, mode := range failoverModes {
		fmt.Fprintf(os.Stderr, "bench: %d pods: failover, %s standby, retry period %s\n", n, mode.name, mode.retry)
		f := report.Failover{N: n, Mode: mode.name, LeaseSeconds: failoverLease.Seconds(), RetrySeconds: mode.retry.Seconds()}
		args := []string{"--kubeconfig", h.kubeconfig, "--config-file", conf, "--leader-elect", "--leader-election-namespace", "default",
			"--leader-election-id", fmt.Sprintf("metawatch-bench-failover-%d-%d-%d", n, i, time.Now().Unix()), // no Lease of an earlier run
			"--leader-election-retry-period", mode.retry.String(), "--metrics-bind-address", "0",
			// The first namespace converges before the kill in seconds, not minutes at the default
			// 50/s: reads and writes (a fixed write rate, as before the pacer) at 1000/s.
			"--kube-api-qps", "1000", "--kube-api-burst", "2000", "--write-rate-min", "1000", "--write-rate-max", "1000"}
		if mode.warm {
			args = append(args, "--warm-standby")
		}
		if err := h.failoverRun(ctx, bin, args, &f); err != nil {
			return fmt.Errorf("failover, %s standby: %w", mode.name, err)
		}
		h.run.Failovers = append(h.run.Failovers, f)
	}
	return nil
}

// failoverRun starts a leader and a standby with args, waits until both are
// Ready and the leader has converged the first namespace, kills the leader
// and times the first write after it, into f.
func (h *harness) failoverRun(ctx context.Context, bin string, args []string, f *report.Failover) error {
	leader, err := scenario.StartReplica(ctx, "failover", bin, args)
	if err != nil {
		return err
	}
	defer leader.Stop()
	if f.LeaderReadySeconds, err = leader.WaitReady(ctx, 15*time.Minute); err != nil {
		return fmt.Errorf("the leader: %w", err)
	}
	standby, err := scenario.StartReplica(ctx, "failover", bin, args)
	if err != nil {
		return err
	}
	defer standby.Stop()
	if f.StandbyReadySeconds, err = standby.WaitReady(ctx, 15*time.Minute); err != nil {
		return fmt.Errorf("the standby: %w", err)
	}
	ns := seed.NamespaceName(0)
	if err := scenario.Label(ctx, h.client, h.observer, ns, fmt.Sprintf("failover-%d-%d", f.N, time.Now().UnixNano()), 10*time.Minute); err != nil {
		return fmt.Errorf("the leader converging the first namespace: %w", err)
	}
	f.LeaderRSS, f.StandbyRSS = probe.RSSOf(strconv.Itoa(leader.Pid())), probe.RSSOf(strconv.Itoa(standby.Pid()))
	killed := time.Now()
	if err := leader.Kill(); err != nil {
		return err
	}
	took, err := scenario.Mended(ctx, h.client, h.observer, ns, h.observer.Pods()[0], killed, 15*time.Minute)
	f.FirstWriteSeconds = took.Seconds()
	return err
}
