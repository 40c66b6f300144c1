package reload

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// ForbiddenRecheckInterval is how often the leader asks the API server again
// for the watches it may not list (at build time or since): once one is
// allowed, the configuration runs anew, in a generation that lists it.
var ForbiddenRecheckInterval = 30 * time.Second

// recheck ticks while the running generation has forbidden watches.
func (r *Reloader) recheck() <-chan time.Time {
	g := r.running()
	if g == nil || len(g.unserved()) == 0 {
		return nil
	}
	return time.After(ForbiddenRecheckInterval)
}

// unserved lists the watches the generation may not list: forbidden at build time or since.
func (g *generation) unserved() []config.ResolvedWatch {
	var out []config.ResolvedWatch
	for _, f := range g.forbidden {
		out = append(out, f.Watch)
	}
	for _, kind := range g.lost.Kinds() {
		for _, w := range g.watches {
			if w.GVK.GroupKind() == kind {
				out = append(out, w)
			}
		}
	}
	return out
}

// forbiddenNowAllowed reports whether any watch the running generation may not
// list may be listed now; the generation is then marked for a rebuild.
func (r *Reloader) forbiddenNowAllowed(ctx context.Context) bool {
	g := r.running()
	if g == nil {
		return false
	}
	allowed, _, err := access.Check(ctx, r.Config, g.unserved())
	if err != nil || len(allowed) == 0 {
		return false
	}
	r.Log.Info("a forbidden watch may be listed again; running the configuration anew", "kind", allowed[0].GVK.GroupKind().String())
	g.rebuild = true
	return true
}

// reportLoss reports a kind whose list or watch became forbidden under a
// running generation: writes to it (and to kinds copying from it, for
// Namespaces) are frozen until the permission returns.
func (r *Reloader) reportLoss(g *generation, kind schema.GroupKind, err error) {
	telemetry.WatchReady.WithLabelValues(kind.String()).Set(0)
	g.publishFrozen()
	msg := fmt.Sprintf("generation %d: the list or watch of %s is now forbidden; metawatch writes nothing there (and to kinds copying from it) until it is granted again: %v",
		g.number, kind, err)
	r.Log.Error(err, "watch no longer served: RBAC forbids it; writes frozen", "kind", kind.String(), "generation", g.number)
	select {
	case r.accessLost <- struct{}{}:
	default:
	}
	if r.follower == nil {
		return
	}
	if cm := r.follower.current().cm; cm != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonForbidden, "Watch", "%s", eventNote(msg))
	}
}

// reportAdmissionProblem reports, once per reason, a rule with atCreation
// whose admission policy is not in place: the rule runs, its keys come a
// moment after creation. The reasons reported outlive generations, so that
// a reload that meets the same one does not repeat its Event.
func (r *Reloader) reportAdmissionProblem(rule, problem string) {
	r.mu.Lock()
	if r.admissionReported == nil {
		r.admissionReported = map[string]string{}
	}
	repeated := r.admissionReported[rule] == problem
	r.admissionReported[rule] = problem
	r.mu.Unlock()
	if repeated || problem == "" || r.follower == nil {
		return // a file has no object to put an Event on; the Syncer logs
	}
	if cm := r.follower.current().cm; cm != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonAtCreationUnavailable, "AdmissionPolicy", "%s",
			eventNote(fmt.Sprintf("rule %q runs without atCreation: %s", rule, problem)))
	}
}
