package failover

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
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

// Setup is what the scenario runs against.
type Setup struct {
	// Bin and Config are the metawatch binary and its configuration file.
	Bin, Config, Kubeconfig string
	Client                  client.Client
	// Observer watches the first namespace's pods.
	Observer *scenario.Observer
}

// Run is the failover scenario at n pods: for a cold standby, then a warm
// one (--warm-standby), two metawatch processes with leader election, the
// leader killed once both are Ready, and the time until a pod's label
// removed right after the kill is written back. On an error it returns the
// figures of the modes that ran before.
func Run(ctx context.Context, s Setup, n int) ([]Result, error) {
	var out []Result
	for i, mode := range failoverModes {
		fmt.Fprintf(os.Stderr, "bench: %d pods: failover, %s standby, retry period %s\n", n, mode.name, mode.retry)
		f := Result{N: n, Mode: mode.name, LeaseSeconds: failoverLease.Seconds(), RetrySeconds: mode.retry.Seconds()}
		args := []string{"--kubeconfig", s.Kubeconfig, "--config-file", s.Config, "--leader-elect", "--leader-election-namespace", "default",
			"--leader-election-id", fmt.Sprintf("metawatch-bench-failover-%d-%d-%d", n, i, time.Now().Unix()), // no Lease of an earlier run
			"--leader-election-retry-period", mode.retry.String(), "--metrics-bind-address", "0",
			// The first namespace converges before the kill in seconds, not minutes at the default
			// 50/s: reads and writes (a fixed write rate, as before the pacer) at 1000/s.
			"--kube-api-qps", "1000", "--kube-api-burst", "2000", "--write-rate-min", "1000", "--write-rate-max", "1000"}
		if mode.warm {
			args = append(args, "--warm-standby")
		}
		if err := runOnce(ctx, s, args, &f); err != nil {
			return out, fmt.Errorf("failover, %s standby: %w", mode.name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// runOnce starts a leader and a standby with args, waits until both are
// Ready and the leader has converged the first namespace, kills the leader
// and times the first write after it, into f.
func runOnce(ctx context.Context, s Setup, args []string, f *Result) error {
	leader, err := scenario.StartReplica(ctx, "failover", s.Bin, args)
	if err != nil {
		return err
	}
	defer leader.Stop()
	if f.LeaderReadySeconds, err = leader.WaitReady(ctx, 15*time.Minute); err != nil {
		return fmt.Errorf("the leader: %w", err)
	}
	standby, err := scenario.StartReplica(ctx, "failover", s.Bin, args)
	if err != nil {
		return err
	}
	defer standby.Stop()
	if f.StandbyReadySeconds, err = standby.WaitReady(ctx, 15*time.Minute); err != nil {
		return fmt.Errorf("the standby: %w", err)
	}
	ns := seed.NamespaceName(0)
	if err := scenario.Label(ctx, s.Client, s.Observer, ns, fmt.Sprintf("failover-%d-%d", f.N, time.Now().UnixNano()), 10*time.Minute); err != nil {
		return fmt.Errorf("the leader converging the first namespace: %w", err)
	}
	f.LeaderRSS, f.StandbyRSS = probe.RSSOf(strconv.Itoa(leader.Pid())), probe.RSSOf(strconv.Itoa(standby.Pid()))
	killed := time.Now()
	if err := leader.Kill(); err != nil {
		return err
	}
	took, err := scenario.Mended(ctx, s.Client, s.Observer, ns, s.Observer.Pods()[0], killed, 15*time.Minute)
	f.FirstWriteSeconds = took.Seconds()
	return err
}
