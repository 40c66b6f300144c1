package reload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/metawatch/metawatch/pkg/brake"
)

// ReasonRemovalsHeld is the Event reason when the removal brake holds the removals and releases of
// a kind's objects beyond its bound, until the configuration is approved.
const ReasonRemovalsHeld = "RemovalsHeld"

// removalBrake is the operator's bound (nil: brake.DefaultLimits).
func (r *Reloader) removalBrake() brake.Limits {
	if r.RemovalBrake == nil {
		return brake.DefaultLimits()
	}
	return *r.RemovalBrake
}

// watchBrake makes g's brake say, on the ConfigMap, when it starts holding
// a kind, and approves g's configuration if the ConfigMap already does.
func (r *Reloader) watchBrake(g *generation) {
	g.brake.OnHeld(func(kind string) { r.reportHeld(g, kind) })
	r.approveRemovals(g)
}

// reportHeld says that g's brake holds kind: an Event on the ConfigMap
// (once per generation and kind) and a log line, with how to let it go on.
func (r *Reloader) reportHeld(g *generation, kind string) {
	limits := r.removalBrake()
	msg := fmt.Sprintf("configuration %s removes or releases keys on more %s objects than the removal brake lets through (%d objects or %g%% of those cached, whichever is more); the others keep their keys; %s",
		g.hash, kind, limits.Objects, limits.SharePercent, r.approveHint(g))
	r.Log.Info("warning: "+msg, "generation", g.number)
	if v := r.configMap(); v != nil {
		r.Recorder.Eventf(v, nil, corev1.EventTypeWarning, ReasonRemovalsHeld, "Brake", "%s", eventNote(msg))
	}
}

// approveHint says how to let g's held removals go on.
func (r *Reloader) approveHint(g *generation) string {
	key, _ := r.Source.configMapKey()
	if key.Name == "" {
		return "to let them go on, raise --removal-brake-objects or --removal-brake-share and restart"
	}
	return "to let them go on: " + g.brake.ApproveCommand(key.Namespace, key.Name)
}

// approveRemovals lets g's removals go on if the ConfigMap's annotation
// names g's configuration (brake.AllowRemovals). The follower tells of every
// change of the ConfigMap, an annotation alone included: sync calls this
// even when the configuration itself is unchanged.
func (r *Reloader) approveRemovals(g *generation) {
	cm := r.configMap()
	if g == nil || cm == nil {
		return
	}
	allowed := cm.Annotations[brake.AllowRemovals]
	if allowed == "" || g.brake.Approved() {
		return
	}
	if g.brake.Approve(allowed) {
		r.Log.Info("removals approved: the removal brake lets the configuration's removals go on", "generation", g.number, "hash", g.hash)
	}
}

// configMap is the followed ConfigMap as it is now, nil for a file or none.
func (r *Reloader) configMap() *corev1.ConfigMap {
	if r.follower == nil {
		return nil
	}
	return r.follower.current().cm
}

// Describe says how this replica runs, for /readyz/configuration: its
// sharding, and what the removal brake holds. Held removals do not make the
// replica unready: it works as it should (the brake is doing its job), and an
// unready leader would stall a rollout or be restarted, which holds the
// removals again in a new generation; the detail, the metric and the alert
// say it instead.
func (r *Reloader) Describe() string {
	out := r.describeSharding()
	g := r.running()
	if g == nil {
		return out
	}
	if held := g.brake.Describe(r.approveHint(g)); held != "" {
		out += "; " + held
	}
	return out
}
