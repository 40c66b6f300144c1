package reload

import (
	"context"
	"fmt"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/sharding"
)

// addReports adds the Writer of the OpenReports reports (--open-reports):
// one for the process, fed by whichever generation runs and writes. Its
// writes leave through the paced, claim-checked client, under the
// leader's claim (leader modes) or, sharded, this ring member's: each
// replica writes its own reports, named after it, with the findings of
// the buckets it holds.
func (r *Reloader) addReports(mgr manager.Manager) error {
	if !r.Settings.OpenReports {
		return nil
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := openreports.Install(scheme); err != nil {
		return err
	}
	c, err := metamanager.WriteClient(r.Config, r.Settings.Pacer, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	r.reportsFence = authority.NewWriteFence()
	guard := authority.Guard{Identity: r.Settings.Identity, Fence: r.reportsFence}
	var member string
	switch {
	case r.Settings.Mode == authority.Sharded:
		guard.Claim = memberClaim{r.Sharding.Ring}
		member = r.Sharding.Ring.Member()
	case r.Settings.Mode.ElectsLeader():
		guard.Claim = r.Leader
	}
	w := &reports.Writer{Client: c, Guard: guard, Member: member, Collector: reportSource{r}, DryRun: r.Settings.DryRun,
		MaxResults: r.Settings.ReportResults, Log: r.Log.WithName("openreports")}
	if r.Settings.Mode == authority.Sharded {
		w.Stale = staleMember(c, r.Sharding.Ring)
	}
	return mgr.Add(w)
}

// memberClaim is a ring member's claim, whatever the object.
type memberClaim struct{ ring *sharding.Ring }

func (m memberClaim) Until(types.UID) (time.Time, bool) { return m.ring.MemberUntil() }

// staleAfter is how long after its last renewal a member whose reports are
// left is taken to be gone for good: its reports are deleted.
const staleAfter = 10 * time.Minute

// staleMember reports whether a ring member is gone: its member Lease is
// gone, or was not renewed for staleAfter (replicas' clocks may differ by
// much less).
func staleMember(c client.Client, ring *sharding.Ring) func(ctx context.Context, member string) bool {
	own := ring.MemberLease()
	prefix := own.Name[:len(own.Name)-len(ring.Member())]
	return func(ctx context.Context, member string) bool {
		var lease coordinationv1.Lease
		err := c.Get(ctx, client.ObjectKey{Namespace: own.Namespace, Name: prefix + member}, &lease)
		if apierrors.IsNotFound(err) {
			return true
		}
		if err != nil || lease.Spec.RenewTime == nil {
			return false
		}
		return time.Since(lease.Spec.RenewTime.Time) > staleAfter
	}
}

// reportSource is what the reports are built from: the running
// generation's audits, what its removal brake holds, and its cached
// objects per namespace.
type reportSource struct{ r *Reloader }

// Active: a generation runs and writes (a standby's does not yet).
func (s reportSource) Active() bool {
	g := s.r.running()
	return g != nil && g.isOpen()
}

func (s reportSource) Version() uint64 {
	g := s.r.running()
	if g == nil {
		return 0
	}
	return uint64(g.number)<<40 + g.audits.Version()
}

func (s reportSource) Collect(b *reports.Builder) bool {
	g := s.r.running()
	if g == nil || !g.isOpen() {
		return false
	}
	objects := g.audits.Findings(b.Add)
	gvks := map[string]schema.GroupVersionKind{}
	for _, w := range g.watches {
		gvks[w.GVK.GroupKind().String()] = w.GVK
	}
	change := g.brake.HeldChange() // not under EachHeld: it takes the brake's lock
	held := fmt.Sprintf("the removal brake holds this object's key removals and releases (change %s); %s", change, s.r.approveHint(change))
	g.brake.EachHeld(func(kind string, key types.NamespacedName) {
		gvk := gvks[kind]
		if !g.audits.HasFinding(kind, key) { // an object with results passes nothing
			objects[key.Namespace]++
		}
		b.Add(reports.Finding{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: key.Namespace, Name: key.Name,
			Check: reports.CheckRemovalHeld, Result: reports.Warn, Message: held, Properties: map[string]string{"change": change}})
	})
	g.reportCounts.Each(func(ns string, n int) { b.Passed(ns, n-objects[ns]) })
	return true
}
