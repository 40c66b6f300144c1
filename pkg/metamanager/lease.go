package metamanager

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const inClusterNamespacePath = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// NewLeaseLock is the leader-election Lease of opts, built by metawatch rather
// than by controller-runtime so that metawatch releases it itself (see
// ReleaseLease): only once the writes of the running generation have
// stopped, never on a timer that may fire while a write is in flight.
func NewLeaseLock(cfg *rest.Config, opts Options) (resourcelock.Interface, error) {
	ns, err := LeaseNamespace(opts)
	if err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	le := LeaseClientConfig(cfg, opts, "leader-election")
	core, err := corev1client.NewForConfig(le)
	if err != nil {
		return nil, err
	}
	coordination, err := coordinationv1client.NewForConfig(le)
	if err != nil {
		return nil, err
	}
	id := cmp.Or(opts.LeaderElectionID, DefaultLeaderElectionID)
	return resourcelock.New(resourcelock.LeasesResourceLock, ns, id, core, coordination,
		resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())})
}

// LeaseClientConfig is the client config of Lease writes (the leader's, or
// the sharding ring's), named agent in the User-Agent: a rate limiter of its
// own, so that a burst of reconciles can never starve a renewal, and a
// timeout of half the renew deadline, so that a hung request does not
// outlast it (controller-runtime's heuristic).
func LeaseClientConfig(cfg *rest.Config, opts Options, agent string) *rest.Config {
	le := rest.AddUserAgent(leaderElectionConfig(cfg), agent)
	le.Timeout = max(RenewDeadlineOf(opts)/2, time.Second)
	return le
}

// RenewDeadlineOf is the leader's renew deadline: opts', or controller-runtime's default.
func RenewDeadlineOf(opts Options) time.Duration { return cmp.Or(opts.RenewDeadline, 10*time.Second) }

// LeaseNamespace is where metawatch's Leases live: --leader-election-namespace,
// else the Pod's own namespace.
func LeaseNamespace(opts Options) (string, error) {
	if opts.LeaderElectionNamespace != "" {
		return opts.LeaderElectionNamespace, nil
	}
	b, err := os.ReadFile(inClusterNamespacePath)
	if err != nil {
		return "", fmt.Errorf("--leader-election-namespace is required out of a cluster (no %s): %w", inClusterNamespacePath, err)
	}
	return string(b), nil
}

// ReleaseLease gives up the Lease if this process holds it, as client-go's
// leader elector does on a clean stop, so that a standby takes over at once
// instead of after the lease duration. Call it only after the manager has
// stopped (its elector no longer renews) and every write has stopped.
func ReleaseLease(ctx context.Context, lock resourcelock.Interface) error {
	record, _, err := lock.Get(ctx)
	if err != nil {
		return fmt.Errorf("reading the Lease: %w", err)
	}
	if record.HolderIdentity != lock.Identity() {
		return nil
	}
	now := metav1.Now()
	return lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: record.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	})
}
