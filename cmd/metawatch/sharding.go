package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/sharding"
)

// podNameEnv names this replica in the ring (the chart sets it from the Pod's
// name). It is required: the host name is not unique per process (two
// processes on one host would take the same buckets, and both write them).
const podNameEnv = "POD_NAME"

// shardingOptions are the flags of --sharding.
type shardingOptions struct {
	enabled bool
	ring    string
}

// errNoRingIdentity: --sharding without POD_NAME.
var errNoRingIdentity = errors.New("--sharding needs the environment variable POD_NAME: each replica's name in the ring must be unique, " +
	"and the host name is not (two processes on one host would take the same buckets and both write them); " +
	"set POD_NAME to a name no other replica of the ring uses (the chart sets it to the Pod's name)")

// ringIdentity is this replica's name in the ring: $POD_NAME.
func ringIdentity() (string, error) {
	if id := os.Getenv(podNameEnv); id != "" {
		return id, nil
	}
	return "", errNoRingIdentity
}

// userAgent names the replica in every request's User-Agent, so that the API
// server's audit log tells the writes of the ring's replicas apart.
func (o shardingOptions) userAgent() (string, error) {
	id, err := ringIdentity()
	if err != nil {
		return "", err
	}
	return rest.DefaultKubernetesUserAgent() + " ring-member/" + id, nil
}

// validate checks what --sharding needs besides its flags: POD_NAME. Which
// flags exclude it is the run mode's (authority.ResolveMode).
func (o shardingOptions) validate() error {
	if o.enabled {
		if _, err := ringIdentity(); err != nil {
			return err
		}
	}
	return nil
}

// addSharding starts this replica's Ring (member and bucket Leases, with the
// leader-election flags' timings) in mgr and returns what the Reloader needs
// to run on its share. Whether the API server filters by shard is asked once,
// here.
func addSharding(ctx context.Context, mgr ctrlmanager.Manager, cfg *rest.Config, opts options) (*reload.Sharding, error) {
	ns, err := metamanager.LeaseNamespace(opts.manager)
	if err != nil {
		return nil, err
	}
	identity, err := ringIdentity()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	leases, err := kubernetes.NewForConfig(metamanager.LeaseClientConfig(cfg, opts.manager, "sharding-ring"))
	if err != nil {
		return nil, err
	}
	ring, err := sharding.NewRing(leases.CoordinationV1(), sharding.Options{Namespace: ns, Ring: opts.sharding.ring, Identity: identity,
		LeaseDuration: opts.manager.LeaseDuration, RenewDeadline: opts.manager.RenewDeadline, RetryPeriod: opts.manager.RetryPeriod})
	if err != nil {
		return nil, err
	}
	serverSide, err := sharding.ServerFilters(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(ctrlmanager.RunnableFunc(ring.Run)); err != nil {
		return nil, fmt.Errorf("adding the sharding ring: %w", err)
	}
	setupLog.Info("sharding: this replica takes its share of the buckets", "ring", opts.sharding.ring, "identity", identity, "namespace", ns,
		"buckets", sharding.Buckets, "serverSideFiltering", serverSide)
	return &reload.Sharding{Ring: ring, ServerSide: serverSide, Recorder: mgr.GetEventRecorder(rulecontroller.EventSource), Regarding: ring.MemberLease()}, nil
}
