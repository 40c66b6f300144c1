package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// waitFor polls cond every 10ms for up to 30 minutes.
func waitFor(ctx context.Context, cond func() bool) error {
	deadline := time.Now().Add(30 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// verifyLabel checks, on the API server, that every pod has cost-center=want.
func verifyLabel(ctx context.Context, c client.Client, o options, want string) error {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(o.namespace)); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Labels["cost-center"] != want {
			return fmt.Errorf("pod %s has cost-center=%q, want %q", p.Name, p.Labels["cost-center"], want)
		}
	}
	if len(pods.Items) != o.pods {
		return fmt.Errorf("%d pods, want %d", len(pods.Items), o.pods)
	}
	return nil
}
