package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of an adoption of keys (metawatch_field_manager_adoptions_total).
const (
	// AdoptionDone: the keys were taken over and the old name let go of them.
	AdoptionDone = "adopted"
	// AdoptionLive: the old name applied to the object after adoption began:
	// an installation still writes as it, and metawatch does not fight it.
	AdoptionLive = "refused-live-writer"
	// AdoptionOtherFields: the old name owns more than labels and
	// annotations on the object; letting go of them would delete those fields.
	AdoptionOtherFields = "refused-other-fields"
)

// Adoptions counts, per kind and result, the objects on which metawatch took
// over the keys of the field manager it wrote as before (--adopt-field-manager),
// or refused to.
var Adoptions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_field_manager_adoptions_total",
	Help: "Objects on which metawatch took over the label and annotation keys of --adopt-field-manager (result adopted), " +
		"or refused to: that name still writes (refused-live-writer) or owns other fields (refused-other-fields).",
}, []string{"kind", "result"})

// FieldManagerShared is 1 while this installation writes nothing because
// another writer applies as its field manager (authority.Identity).
var FieldManagerShared = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "metawatch_field_manager_shared",
	Help: "1 while this installation writes nothing because another writer applies as its --field-manager (two installations sharing one name erase each other's keys); 0 otherwise.",
})

func init() { ctrlmetrics.Registry.MustRegister(Adoptions, FieldManagerShared) }
