package main

import (
	"context"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/bench/target"
)

// seedVia is how the harness seeds pods on tgt: through the API, or copied
// into etcd where the harness runs etcd itself.
func seedVia(o options, tgt *target.Cluster) (string, error) {
	canEtcd := tgt.ControlPlane != nil && o.kwokNodes == 0
	switch o.seedVia {
	case "":
		if canEtcd {
			return "etcd", nil
		}
		return "api", nil
	case "api":
		return "api", nil
	case "etcd":
		if !canEtcd {
			return "", fmt.Errorf("--seed etcd: pods can be copied into etcd only on the local control plane (no --kind, --kubeconfig or --local-cluster) " +
				"and without --kwok-nodes, whose nodes must see each pod bound; use --seed api")
		}
		return "etcd", nil
	}
	return "", fmt.Errorf("--seed %q: want api or etcd", o.seedVia)
}

// growInEtcd grows the population to pods from..to-1: the first namespace
// through the API, as the template, and the rest copied from it into etcd
// with kube-apiserver stopped, then started again and checked to serve them.
func (h *harness) growInEtcd(ctx context.Context, from, to int) error {
	per := h.population.PerNamespace
	if from < per {
		if err := h.population.Grow(ctx, from, min(to, per)); err != nil {
			return err
		}
		from = per
	}
	if to <= from {
		return nil
	}
	cp := h.controlPlane
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{cp.EtcdURL()}, DialTimeout: 10 * time.Second, Context: ctx})
	if err != nil {
		return fmt.Errorf("connecting to etcd at %s: %w", cp.EtcdURL(), err)
	}
	defer etcd.Close()
	fmt.Fprintf(os.Stderr, "bench: stopping kube-apiserver to copy pods %d..%d into etcd\n", from, to-1)
	if err := cp.StopAPIServer(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	start := time.Now()
	copier := seed.EtcdCopy{Client: etcd, Prefix: "/registry", PerNamespace: per, Concurrency: 4, Log: os.Stderr}
	copyErr := copier.Grow(ctx, from, to)
	fmt.Fprintf(os.Stderr, "bench: copied %d pods into etcd in %s; starting kube-apiserver\n", to-from, time.Since(start).Round(time.Second))
	start = time.Now()
	if err := cp.StartAPIServer(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	if copyErr != nil {
		return copyErr
	}
	if err := seed.WaitServed(ctx, h.countPods, to, 10*time.Minute, os.Stderr); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: kube-apiserver serves the %d pods, %s after its start\n", to, time.Since(start).Round(time.Second))
	return checkCopied(ctx, h.client, seed.NamespaceName((to-1)/per), (to-1)%per)
}

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// countPods is the number of pods the API server lists: the one item of a
// one-item page and the count of the rest (the local control plane has no
// pods but the bench's).
func (h *harness) countPods(ctx context.Context) (int, error) {
	mc, err := metadata.NewForConfig(h.cfg)
	if err != nil {
		return 0, err
	}
	list, err := mc.Resource(podsResource).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	n := len(list.Items)
	if list.RemainingItemCount != nil {
		n += int(*list.RemainingItemCount)
	}
	return n, nil
}

// checkCopied decodes the j-th pod of namespace ns, one the API server has
// only from etcd, and checks it against the first namespace's: the same
// labels, annotations and managers, its own uid, and an owner reference to
// its own namespace's ReplicaSet.
func checkCopied(ctx context.Context, c client.Client, ns string, j int) error {
	var copied, template corev1.Pod
	name := seed.Pod(ns, j).Name
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &copied); err != nil {
		return fmt.Errorf("reading back copied pod %s/%s: %w", ns, name, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: seed.NamespaceName(0), Name: name}, &template); err != nil {
		return fmt.Errorf("reading template pod %s/%s: %w", seed.NamespaceName(0), name, err)
	}
	if err := seed.SameBut(&template, &copied); err != nil {
		return fmt.Errorf("copied pod %s/%s: %w", ns, name, err)
	}
	var owner appsv1.ReplicaSet
	ref := copied.OwnerReferences[0]
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &owner); err != nil {
		return fmt.Errorf("copied pod %s/%s: its owner: %w", ns, name, err)
	}
	if owner.UID != ref.UID {
		return fmt.Errorf("copied pod %s/%s names owner uid %s, but ReplicaSet %s/%s has uid %s", ns, name, ref.UID, ns, owner.Name, owner.UID)
	}
	fmt.Fprintf(os.Stderr, "bench: pod %s/%s, copied through etcd, reads back as the API wrote its template\n", ns, name)
	return nil
}

// recordControlPlane adds what the local kube-apiserver and etcd hold at n
// pods to the report.
func (h *harness) recordControlPlane(ctx context.Context, n int) {
	if h.controlPlane == nil {
		return
	}
	apiserver, etcd := probe.NewestPIDOf("kube-apiserver"), probe.NewestPIDOf("etcd")
	cost := report.ControlPlaneCost{N: n, APIServerPeakRSS: probe.PeakRSSOf(apiserver), APIServerRSS: probe.RSSOf(apiserver),
		EtcdPeakRSS: probe.PeakRSSOf(etcd), EtcdRSS: probe.RSSOf(etcd)}
	if m := h.billMeter; m != nil && m.PID() == apiserver {
		cost.APIServerPeakRSS = m.PeakSinceStart() // the bill reset its high-water mark
	}
	if c, err := clientv3.New(clientv3.Config{Endpoints: []string{h.controlPlane.EtcdURL()}, DialTimeout: 10 * time.Second, Context: ctx}); err == nil {
		if status, err := c.Status(ctx, h.controlPlane.EtcdURL()); err == nil {
			cost.EtcdDB = status.DbSize
		}
		_ = c.Close()
	}
	h.run.ControlPlane = append(h.run.ControlPlane, cost)
}
