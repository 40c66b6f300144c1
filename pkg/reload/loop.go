package reload

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// errSuperseded: a newer valid version appeared while a generation was being
// built; the generation is dropped unopened and the newer version runs next.
var errSuperseded = errors.New("a newer valid configuration appeared while this one was starting")

// followConfigMap runs the ConfigMap's versions as they come, from the one it
// holds now, until ctx ends. A transient failure is retried with backoff
// (1s doubling to 1m); a change cancels the wait.
func (r *Reloader) followConfigMap(ctx context.Context) {
	select {
	case <-r.follower.synced:
	case <-ctx.Done():
		return
	}
	backoff := retryBackoff()
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.follower.changed:
		case <-retry:
		case <-r.accessLost:
			continue // recheck() now ticks
		case <-r.recheck():
			if !r.forbiddenNowAllowed(ctx) {
				continue
			}
		}
		retry = nil
		err := r.sync(ctx)
		// Whatever became of the configuration (an approval alone may have
		// changed, or come with an invalid edit), the running generation
		// uses the approval for what it holds.
		r.approveRemovals(ctx, r.running())
		switch {
		case err == nil:
			backoff = retryBackoff()
		case ctx.Err() != nil, errors.Is(err, errSuperseded):
		default:
			delay := backoff.Step()
			r.retryLater(err, delay)
			retry = time.After(delay)
		}
	}
}

// followFile keeps the file's configuration running until ctx ends, and runs
// it anew once a watch it may not list becomes allowed.
func (r *Reloader) followFile(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.accessLost:
		case <-r.recheck():
			if r.forbiddenNowAllowed(ctx) {
				r.runAnew(ctx)
			}
		}
	}
}

// runAnew runs the file's configuration in a new generation; on failure the running one keeps running.
func (r *Reloader) runAnew(ctx context.Context) {
	if err := r.apply(ctx, r.Initial, 0, nil); err != nil && ctx.Err() == nil {
		r.Log.Error(err, "running the configuration anew; the running generation keeps running")
	}
}

func retryBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: time.Minute}
}

// sync runs the ConfigMap as it is now: a valid version that differs from the
// running one; for a gone or invalid ConfigMap, the running generation stays,
// or, when none runs yet (this replica just won the Lease) or it must run anew
// (a forbidden watch became allowed), the newest valid version this replica
// saw. It returns only transient failures.
func (r *Reloader) sync(ctx context.Context) error {
	v := r.follower.current()
	switch {
	case v.cm == nil:
		r.configMapGone()
	case v.err != nil:
		r.reject(v.cm, v.err)
	default:
		return r.runVersion(ctx, v)
	}
	if g := r.running(); g != nil && !g.rebuild {
		return nil
	}
	if newest := r.follower.newestValid(); newest != nil {
		r.Log.Info("running the newest valid configuration this replica saw", "resourceVersion", newest.cm.ResourceVersion)
		return r.runVersion(ctx, *newest)
	}
	return nil
}

// runVersion swaps to a generation running v, unless v already runs.
func (r *Reloader) runVersion(ctx context.Context, v version) error {
	if g := r.running(); g != nil && g.hash == v.hash && !g.rebuild {
		telemetry.ConfigLastReloadSuccessful.Set(1) // e.g. a bad edit reverted
		return nil
	}
	err := r.apply(ctx, v.conf, configOrder(v.cm), func() bool { return r.superseded(v) })
	switch {
	case err == nil:
		g := r.running()
		r.Recorder.Eventf(v.cm, nil, corev1.EventTypeNormal, ReasonReloaded, "Reload", "generation %d running (%d watches)", g.number, len(g.watches))
		for _, f := range g.forbidden {
			r.Recorder.Eventf(v.cm, nil, corev1.EventTypeWarning, ReasonForbidden, "Reload", "%s", eventNote(f.Err.Error()))
		}
		return nil
	case config.IsInvalid(err):
		r.reject(v.cm, err)
		return nil
	}
	r.lastTransient = v.cm
	return err
}

// superseded reports whether a newer valid version than v has appeared.
func (r *Reloader) superseded(v version) bool {
	newest := r.follower.newestValid()
	return newest != nil && newest.hash != v.hash
}

// retryLater reports a transient failure: the configuration is valid, and
// runs once the cluster lets it.
func (r *Reloader) retryLater(err error, delay time.Duration) {
	telemetry.ConfigLastReloadSuccessful.Set(0)
	telemetry.ConfigReloadRetries.Inc()
	keeping := "no configuration is running yet"
	if g := r.running(); g != nil {
		keeping = fmt.Sprintf("generation %d keeps running", g.number)
	}
	msg := fmt.Sprintf("the configuration is valid but could not start (%s); %s; retrying in %s", config.Describe(err), keeping, delay.Round(time.Second))
	r.Log.Info("warning: " + msg)
	if cm := r.lastTransient; cm != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonRetrying, "Reload", "%s", eventNote(msg))
	}
}

// reject reports a configuration that was not applied because it is invalid.
func (r *Reloader) reject(cm *corev1.ConfigMap, err error) {
	telemetry.ConfigLastReloadSuccessful.Set(0)
	keeping := "no configuration is running"
	if g := r.running(); g != nil {
		keeping = fmt.Sprintf("generation %d keeps running", g.number)
	} else {
		r.setWaiting("the configuration in " + r.Source.String() + " is invalid: " + err.Error())
	}
	r.Log.Error(err, "configuration rejected; "+keeping, "configMap", r.Source.ConfigMap)
	if cm != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonInvalidConfig, "Reload", "%s", eventNote(keeping+": "+config.Describe(err)))
	}
}

func (r *Reloader) configMapGone() {
	telemetry.ConfigLastReloadSuccessful.Set(0)
	if g := r.running(); g != nil {
		r.Log.Info("warning: the selectors ConfigMap is gone; generation keeps running with the last good configuration",
			"configMap", r.Source.ConfigMap, "generation", g.number)
		return
	}
	r.Log.Info("waiting for the selectors ConfigMap", "configMap", r.Source.ConfigMap)
}

// maxEventNote bounds an Event's message (the API server rejects notes over 1 KiB).
const maxEventNote = 1000

// eventNote is s cut to maxEventNote.
func eventNote(s string) string {
	if len(s) <= maxEventNote {
		return s
	}
	return s[:maxEventNote-3] + "..."
}
