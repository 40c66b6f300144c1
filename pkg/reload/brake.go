package reload

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/brake"
)

// Event reasons of the removal brake, on the selectors ConfigMap.
const (
	// ReasonRemovalsHeld: the brake holds the removals and releases of a
	// kind's objects beyond its bound, until the held change is approved.
	ReasonRemovalsHeld = "RemovalsHeld"
	// ReasonRemovalsApproved: an approval let the held objects go on.
	ReasonRemovalsApproved = "RemovalsApproved"
	// ReasonApprovalNotUsed: the ConfigMap's approval cannot apply.
	ReasonApprovalNotUsed = "RemovalApprovalNotUsed"
)

// approvalTimeout bounds the record's update an approval makes.
const approvalTimeout = 30 * time.Second

// addLedger makes the process's ledger of the removal brake: the record in
// the ConfigMap BrakeRecord names, written through the fenced, paced client
// under the leader's claim (sharded replicas share it; every write is a
// compare-and-swap), or in memory when none is named or --dry-run writes
// nothing.
func (r *Reloader) addLedger(fenced client.Client) {
	if r.BrakeRecord.Name == "" {
		r.BrakeRecord = BrakeRecordFor(r.Source, "", "")
	}
	if r.BrakeRecord.Name == "" || r.Settings.DryRun {
		r.ledger = brake.NewLedger(&brake.MemoryStore{}, nil)
		if !r.Settings.DryRun && !r.Settings.RemovalBrake.Disabled() {
			r.Log.Info("warning: the removal brake keeps its count in memory only: a restart begins it again; name a ConfigMap to keep it in with --removal-brake-record")
		}
		return
	}
	r.ledger = brake.NewLedger(&brake.ConfigMapStore{Key: r.BrakeRecord, Reader: fenced, Client: fenced, Guard: authority.Guard{Claim: r.Leader}}, nil)
}

// configOrder orders the ConfigMap's versions for the brake's record: its
// resourceVersion, 0 for a file or one that is not a number.
func configOrder(cm *corev1.ConfigMap) uint64 {
	if cm == nil {
		return 0
	}
	n, err := strconv.ParseUint(cm.ResourceVersion, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// watchBrake makes g's brake say, on the ConfigMap, when it starts holding
// a kind, and use the ConfigMap's approval for what it holds then.
func (r *Reloader) watchBrake(g *generation) {
	g.brake.OnHeld(func(kind, token string) {
		r.reportHeld(g, kind, token)
		ctx, cancel := context.WithTimeout(context.Background(), approvalTimeout)
		defer cancel()
		r.approveRemovals(ctx, g) // given before this replica held: used now
	})
}

// reportHeld says that g's brake holds kind under change token ("": it cannot
// keep its count): an Event on the ConfigMap (once per change and kind) and a
// log line, with how to let it go on.
func (r *Reloader) reportHeld(g *generation, kind, token string) {
	bound := r.Settings.RemovalBrake
	var msg string
	if token == "" {
		msg = fmt.Sprintf("the removal brake holds every removal and release of %s objects: it cannot keep its count (%v); "+
			"give metawatch get, create and patch on that ConfigMap (the chart's Role does), or turn the brake off with --removal-brake-objects=0 --removal-brake-share=0",
			kind, g.brake.Ledger().Err())
	} else {
		msg = fmt.Sprintf("configuration %s... removes or releases keys on more %s objects than the removal brake lets through (%d objects or %g%% of those cached, whichever is more, per %s); "+
			"the others keep their keys, held as change %s; %s",
			g.hash[:12], kind, bound.Objects, bound.SharePercent, bound.Window, token, r.approveHint(token))
	}
	r.Log.Info("warning: "+msg, "generation", g.number)
	if v := r.configMap(); v != nil {
		r.Recorder.Eventf(v, nil, corev1.EventTypeWarning, ReasonRemovalsHeld, "Brake", "%s", eventNote(msg))
	}
}

// approveHint says how to let the held change token go on.
func (r *Reloader) approveHint(token string) string {
	key, _ := r.Source.configMapKey()
	if key.Name == "" || token == "" {
		return "to let them go on, raise --removal-brake-objects or --removal-brake-share and restart"
	}
	return "to let them go on: " + brake.ApproveCommand(key.Namespace, key.Name, token) +
		" (or " + token + ",objects=N to let up to N of them per kind go on)"
}

// approveRemovals uses the ConfigMap's approval (brake.AllowRemovals) for
// what g's brake holds. It runs on every change of the ConfigMap, valid or
// not (an approval given while a newer invalid edit is pending still names
// the running change), and when g starts holding a kind. An approval that
// cannot apply is said once per value: a Warning Event and a line in
// /readyz/configuration.
func (r *Reloader) approveRemovals(ctx context.Context, g *generation) {
	cm := r.configMap()
	if g == nil || cm == nil {
		return
	}
	value := cm.Annotations[brake.AllowRemovals]
	verdict := g.brake.Approve(ctx, value)
	if len(verdict.Released) > 0 {
		r.reportApproved(cm, g, verdict)
	}
	r.noteApprovalProblem(cm, value, verdict.Problem)
}

// reportApproved says what an approval let go on.
func (r *Reloader) reportApproved(cm *corev1.ConfigMap, g *generation, v brake.Verdict) {
	kinds := make([]string, 0, len(v.Released))
	for kind, n := range v.Released {
		kinds = append(kinds, fmt.Sprintf("%d %s objects", n, kind))
	}
	sort.Strings(kinds)
	msg := fmt.Sprintf("approval %s used: %s held by the removal brake go on now; it is recorded as used, and a later mass removal is held again, under a new change",
		v.Token, strings.Join(kinds, ", "))
	if r.follower != nil && r.follower.current().err != nil {
		msg += fmt.Sprintf(" (for configuration %s..., which keeps running: the ConfigMap's newer edit is invalid)", g.hash[:12])
	}
	r.Log.Info(msg, "generation", g.number)
	r.Recorder.Eventf(cm, nil, corev1.EventTypeNormal, ReasonRemovalsApproved, "Brake", "%s", eventNote(msg))
}

// noteApprovalProblem keeps problem for /readyz/configuration and says it
// once per approval value.
func (r *Reloader) noteApprovalProblem(cm *corev1.ConfigMap, value, problem string) {
	r.mu.Lock()
	said := r.approvalProblem == problem && r.approvalValue == value
	r.approvalProblem, r.approvalValue = problem, value
	r.mu.Unlock()
	if problem == "" || said {
		return
	}
	r.Log.Info("warning: " + problem)
	r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonApprovalNotUsed, "Brake", "%s", eventNote(problem))
}

// configMap is the followed ConfigMap as it is now, nil for a file or none.
func (r *Reloader) configMap() *corev1.ConfigMap {
	if r.follower == nil {
		return nil
	}
	return r.follower.current().cm
}

// Describe says how this replica runs, for /readyz/configuration: its
// sharding, what the removal brake holds, and an approval that cannot
// apply. Held removals do not make the replica unready: it works as it
// should (the brake is doing its job), and an unready leader would stall a
// rollout or be restarted; the detail, the metric and the alert say it
// instead.
func (r *Reloader) Describe() string {
	out := r.describeSharding()
	g := r.running()
	if g == nil {
		return out
	}
	if held := g.brake.Describe(r.approveHint(g.brake.HeldChange())); held != "" {
		out += "; " + held
	}
	r.mu.Lock()
	problem := r.approvalProblem
	r.mu.Unlock()
	if problem != "" {
		out += "; " + problem
	}
	return out
}

// BrakeRecordFor is where the removal brake keeps its count by default: a
// ConfigMap beside the selectors ConfigMap, named after it; for a file, one
// named after the Lease in its namespace (leaseNamespace, leaseName) when
// those are known; none (memory only) otherwise.
func BrakeRecordFor(source Source, leaseNamespace, leaseName string) types.NamespacedName {
	if key, err := source.configMapKey(); err == nil && key.Name != "" {
		return types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-removal-brake"}
	}
	if leaseNamespace != "" && leaseName != "" {
		return types.NamespacedName{Namespace: leaseNamespace, Name: leaseName + "-removal-brake"}
	}
	return types.NamespacedName{}
}
