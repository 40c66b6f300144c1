package converge

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
)

// Setup is what the scenario runs against.
type Setup struct {
	// Measured is the variant, synced: its process, or the chart's pods.
	Measured child.Measured
	// Variant names it in the namespace's new value.
	Variant string
	Client  client.Client
	// Observer watches the first namespace's pods.
	Observer *scenario.Observer
}

// Run is the converge scenario on the variant at n pods: the first
// namespace relabelled, timed until every pod of it carries the value. Its
// figures are returned, too, where the variant's last snapshot failed.
func Run(ctx context.Context, s Setup, n int) (*Result, error) {
	before, err := s.Measured.Snapshot()
	if err != nil {
		return nil, err
	}
	took, err := scenario.Converge(ctx, s.Client, s.Observer, seed.NamespaceName(0), fmt.Sprintf("%s-%d", s.Variant, n))
	if err != nil {
		return nil, fmt.Errorf("converge: %w", err)
	}
	after, err := child.QuietSnapshot(s.Measured)
	return &Result{Pods: len(s.Observer.Pods()), Seconds: took.Seconds(), Activity: child.ActivityBetween(before, after)}, err
}

// RunBare takes the bare-client reference for convergence at n pods, which
// also leaves every pod of the first namespace (observed by o) converged as
// metawatch's field manager: each variant starts from the same state.
func RunBare(ctx context.Context, c client.Client, o *scenario.Observer, n, concurrency int) (Bare, error) {
	took, err := scenario.Bare(ctx, c, o, seed.NamespaceName(0), fmt.Sprintf("bare-%d", n), concurrency)
	if err != nil {
		return Bare{}, fmt.Errorf("bare client: %w", err)
	}
	return Bare{N: n, Pods: len(o.Pods()), Seconds: took.Seconds()}, nil
}
