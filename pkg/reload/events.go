package reload

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/eventdigest"
)

// addEvents makes the process's Digest, unless one was given, and runs it
// with mgr on every replica: one that does not lead has no controller
// running, or (warm) none watching, so it folds nothing.
func (r *Reloader) addEvents(mgr manager.Manager) error {
	if r.Events != nil {
		return nil
	}
	sink, err := eventdigest.NewSink(r.Config)
	if err != nil {
		return err
	}
	r.Events = eventdigest.New(sink, eventdigest.DefaultInstance(), r.Log.WithName("events"))
	r.Events.WritesPerMinute = r.Settings.EventWritesPerMinute
	if key, err := r.Source.configMapKey(); err == nil && key.Name != "" {
		r.Events.ClusterRegarding = func() *corev1.ObjectReference {
			ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: key.Namespace, Name: key.Name}
			if cm := r.configMap(); cm != nil {
				ref.UID = cm.UID
			}
			return ref
		}
	}
	return mgr.Add(r.Events)
}

// leaderEvents records only once this replica leads: a warm standby runs
// the same generations as the leader and would otherwise say everything
// the leader says a second time, on the same ConfigMap.
type leaderEvents struct {
	events.EventRecorder
	elected <-chan struct{}
}

func (l leaderEvents) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	select {
	case <-l.elected:
		l.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	default:
	}
}
