package churn

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/kwok"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
)

// Sender sends a churn to the first namespace's pods.
type Sender struct {
	Client client.Client
	// Observer watches the first namespace's pods.
	Observer *scenario.Observer
	// Kwok, when the pods are on its simulated nodes, sends the status
	// updates, as their kubelet would (nil: the harness sends them).
	Kwok *kwok.Kwok
}

// Send runs the churn of opts on the first namespace's pods; with kwok, the
// pods' kubelet (kwok) sends the status updates, not the churn. It returns
// the status updates sent (or, with kwok, seen).
func (s Sender) Send(ctx context.Context, opts scenario.ChurnOptions) (scenario.ChurnResult, int, error) {
	stopProbes := func() error { return nil }
	if s.Kwok != nil {
		var err error
		if stopProbes, err = s.Kwok.Probe(ctx, seed.NamespaceName(0), len(s.Observer.Pods()), opts.StatusPerSecond); err != nil {
			return scenario.ChurnResult{}, 0, err
		}
		opts.StatusPerSecond = 0
	}
	res, err := scenario.Churn(ctx, s.Client, s.Observer, seed.NamespaceName(0), opts)
	if err := errors.Join(err, stopProbes()); err != nil {
		return res, 0, fmt.Errorf("churn: %w", err)
	}
	if s.Kwok != nil {
		return res, res.StatusUpdatesSeen, nil
	}
	return res, res.StatusUpdates, nil
}

// Setup is what the scenario runs against.
type Setup struct {
	// Measured is the variant, synced: its process, or the chart's pods.
	Measured child.Measured
	Sender   Sender
	// Churn is --churn-status-rate and --churn-label-rate for --churn-duration.
	Churn scenario.ChurnOptions
}

// Run is the churn scenario on the variant: the churn sent, then the
// variant's activity once it is quiet again, and each label change's
// latency.
func Run(ctx context.Context, s Setup) (*Result, error) {
	before, err := s.Measured.Snapshot()
	if err != nil {
		return nil, err
	}
	res, statusUpdates, err := s.Sender.Send(ctx, s.Churn)
	if err != nil {
		return nil, err
	}
	after, err := child.QuietSnapshot(s.Measured)
	if err != nil {
		return nil, err
	}
	r := &Result{Seconds: s.Churn.Duration.Seconds(), StatusUpdates: statusUpdates, LabelChanges: res.LabelChanges,
		Activity: child.ActivityBetween(before, after), Missed: res.Missed}
	if s.Sender.Kwok != nil {
		r.StatusBy = "kwok"
	}
	for _, l := range res.Latencies {
		r.LatenciesMillis = append(r.LatenciesMillis, float64(l.Microseconds())/1000)
	}
	return r, nil
}
