package reload

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// ReasonFieldManagerShared is the Event reason when another writer applies
// as this installation's field manager: it writes nothing until restarted
// with a name of its own.
const ReasonFieldManagerShared = "FieldManagerShared"

// reportSharedName says, once, that the installation stopped writing
// because another writer shares its field manager: an error in the log, a
// Warning Event on the ConfigMap, the metric; the readiness check fails
// with the same message (Ready).
func (r *Reloader) reportSharedName(err error) {
	telemetry.FieldManagerShared.Set(1)
	r.Log.Error(err, "writes stopped")
	if cm := r.configMap(); cm != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonFieldManagerShared, "Write", "%s", eventNote(err.Error()))
	}
}
