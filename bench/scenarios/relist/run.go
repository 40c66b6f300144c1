package relist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// relistRevisions is how many revisions etcd is moved on while the API
// server is stopped. One is not enough: a watch cache that starts at
// revision R serves a watch from R-1 (it has every event after it: none).
const relistRevisions = 10

// relistKey is where the revisions are written: outside the API server's
// prefix (/registry), so that no API object changes.
const relistKey = "/metawatch-bench/relist"

// relistTimeout bounds a variant's relist, from the API server's start:
// at a million pods a sync took about 260 s here, and client-go backs off
// for up to 30 s between tries while the API server is down.
const relistTimeout = 20 * time.Minute

// relistBytesShare is the least share of its sync's bytes of pods a variant
// must receive again for its relist to count: a resumed watch brings none.
const relistBytesShare = 0.9

// ErrNotLocal says why the scenario cannot run: the harness restarts only a
// kube-apiserver it runs.
var ErrNotLocal = errors.New("the relist scenario restarts kube-apiserver, which the harness can do only on the local control plane it starts itself " +
	"(no --kind, --kubeconfig, $KUBECONFIG or --local-cluster)")

// Setup is what the scenario runs against.
type Setup struct {
	// Child is the variant's process, synced, after its steady window.
	Child *child.Process
	// ControlPlane is the local control plane whose kube-apiserver is restarted.
	ControlPlane *controlplane.ControlPlane
	// Variant names the variant in the log.
	Variant string
	// SyncPodBytes are the bytes of pod lists and watches the variant
	// received in its initial sync; SteadyRSSBytes its steady set after it.
	SyncPodBytes   float64
	SteadyRSSBytes int64
	// Steady runs the steady window and returns the resident set after it
	// and the Go runtime's account of it (0 and nil: no window).
	Steady func(context.Context, child.Measured) (int64, map[string]uint64, error)
}

// Run is the relist scenario on the variant's process at n pods: the API
// server restarted past its resourceVersion, the time until it has every
// pod again, and what the relist cost. On an error after the restart it
// returns the figures taken so far.
func Run(ctx context.Context, s Setup, n int) (*Result, error) {
	ch := s.Child
	before, err := ch.Snapshot()
	if err != nil {
		return nil, err
	}
	l := &Result{PeakBeforeRSSBytes: max(before.PeakRSSBytes, before.RSSBytes, s.SteadyRSSBytes)}
	start, err := ch.Ask("relist-begin")
	if err != nil {
		return l, err
	}
	fmt.Fprintf(os.Stderr, "bench: %d pods: %s: restarting kube-apiserver past its resourceVersion to make it relist\n", n, s.Variant)
	stopped := time.Now()
	if err := restartPastRevision(ctx, s.ControlPlane); err != nil {
		return l, fmt.Errorf("relist: %w", err)
	}
	served := time.Now()
	l.RestartSeconds = served.Sub(stopped).Seconds()
	minBytes := int64(relistBytesShare * s.SyncPodBytes)
	relisted, err := waitRelisted(ctx, ch, start, n, minBytes)
	if err != nil {
		return l, fmt.Errorf("relist: %w", err)
	}
	l.Seconds = relisted.Sub(served).Seconds()
	if err := relistEnd(ch, start, l); err != nil {
		return l, err
	}
	fmt.Fprintf(os.Stderr, "bench: %d pods: %s relisted %.1f s after the API server was ready again: peak %.0f MiB (before: %.0f MiB)\n",
		n, s.Variant, l.Seconds, float64(l.PeakRSSBytes)/(1<<20), float64(l.PeakBeforeRSSBytes)/(1<<20))
	l.SteadyRSSBytes, l.SteadyMemory, err = s.Steady(ctx, ch)
	return l, err
}

// relistEnd waits for the variant to go quiet, ends the child's watch of
// its peak and records what the relist cost in l; a variant that counts its
// relists must have counted one.
func relistEnd(ch *child.Process, start child.Snapshot, l *Result) error {
	quiet, err := child.QuietSnapshot(ch)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); quiet.Relists != nil && *quiet.Relists <= relistsOf(start) && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		if quiet, err = ch.Snapshot(); err != nil {
			return err
		}
	}
	end, err := ch.Ask("relist-end")
	if err != nil {
		return err
	}
	l.Events, l.PodBytes, l.CPUSeconds = quiet.Events-start.Events, probe.PodBytes(quiet.Bytes)-probe.PodBytes(start.Bytes), quiet.CPUSeconds-start.CPUSeconds
	l.PeakRSSBytes, l.PeakLiveHeapBytes = max(end.PeakRSSBytes, end.RSSBytes), end.RelistPeakLiveHeapBytes
	if at := end.RelistAtPeak; at != nil {
		l.PeakSampledRSSBytes, l.PeakMemory = at.RSSBytes, at.Memory
	}
	if quiet.Relists != nil {
		counted := *quiet.Relists - relistsOf(start)
		l.Relists = &counted
		if counted < 1 {
			return fmt.Errorf("relist: the variant received every pod again but counted no relist of its own")
		}
	}
	return nil
}

func relistsOf(s child.Snapshot) int64 {
	if s.Relists == nil {
		return 0
	}
	return *s.Relists
}

// restartPastRevision stops the local kube-apiserver, moves etcd's
// revision on by relistRevisions and starts the API server again (until it
// is ready; the variant's relist is what shows it serves every pod).
func restartPastRevision(ctx context.Context, cp *controlplane.ControlPlane) error {
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{cp.EtcdURL()}, DialTimeout: 10 * time.Second, Context: ctx})
	if err != nil {
		return fmt.Errorf("connecting to etcd at %s: %w", cp.EtcdURL(), err)
	}
	defer etcd.Close()
	if err := cp.StopAPIServer(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	var moveErr error
	for i := range relistRevisions {
		if _, err := etcd.Put(ctx, relistKey, strconv.Itoa(i)); err != nil {
			moveErr = fmt.Errorf("moving etcd's revision on: %w", err)
			break
		}
	}
	if err := cp.StartAPIServer(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return moveErr
}

// waitRelisted waits until the variant has received, since start, an event
// for each of the n pods and at least minBytes of pod lists and watches: a
// relist, not a resumed watch, which brings neither. It returns when.
func waitRelisted(ctx context.Context, ch *child.Process, start child.Snapshot, n int, minBytes int64) (time.Time, error) {
	deadline := time.Now().Add(relistTimeout)
	for {
		s, err := ch.Snapshot()
		if err != nil {
			return time.Time{}, err
		}
		events, bytes := s.Events-start.Events, probe.PodBytes(s.Bytes)-probe.PodBytes(start.Bytes)
		if events >= int64(n) && bytes >= minBytes {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("no relist within %s of the API server's restart: %d events of the %d pods and %d bytes of pods received, want all and at least %d",
				relistTimeout, events, n, bytes, minBytes)
		}
		if err := scenario.Sleep(ctx, 250*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}
