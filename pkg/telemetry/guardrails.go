package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// KeysLeft is, per kind and guardrail, the keys on cached objects that
// metawatch would write (set, remove, or release: a key it owns that no rule
// wants) but leaves as they are because the operator's limits forbid it:
// reason kind (--writable-kinds), namespace (the write scope),
// protected-key (--protected-keys) or reserved-key.
var KeysLeft = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "metawatch_keys_left_by_guardrail",
	Help: "Keys on cached objects metawatch would write (set, remove or release) but leaves as they are because a guardrail forbids it, " +
		"by kind and reason (kind, namespace, protected-key, reserved-key).",
}, []string{"kind", "reason"})

func init() { ctrlmetrics.Registry.MustRegister(KeysLeft) }
