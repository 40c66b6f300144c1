package controller

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/metawatch/metawatch/pkg/metrics"
	"github.com/metawatch/metawatch/pkg/rules"
)

// ReasonMissingRequired is the Event reason for an object that starts violating a require rule.
const ReasonMissingRequired = "MissingRequiredMetadata"

// audit tracks which objects violate which rules, so that the violations gauge
// is exact and an object gets one Event when it starts violating a rule, not
// one per reconcile. It holds only the violating objects; nothing is stored in etcd.
type audit struct {
	kind     string
	recorder events.EventRecorder
	mu       sync.Mutex
	failing  map[types.NamespacedName]map[string]bool // object -> violated rules
}

func newAudit(kind string, recorder events.EventRecorder) *audit {
	return &audit{kind: kind, recorder: recorder, failing: map[types.NamespacedName]map[string]bool{}}
}

// observe records obj's current violations: an Event and a gauge increment for
// each rule it starts violating, a decrement for each it stops violating.
func (a *audit) observe(key types.NamespacedName, obj runtime.Object, violations []rules.Violation) {
	now := map[string]bool{}
	for _, v := range violations {
		now[v.Rule] = true
	}
	a.mu.Lock()
	before := a.failing[key]
	a.setLocked(key, now)
	a.mu.Unlock()
	for _, v := range violations {
		if !before[v.Rule] {
			metrics.RuleViolations.WithLabelValues(v.Rule, a.kind).Inc()
			a.recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonMissingRequired, "Audit", "rule %s: %s", v.Rule, describeMissing(v))
		}
	}
	a.decrement(before, now)
}

// forget drops a deleted object's violations.
func (a *audit) forget(key types.NamespacedName) {
	a.mu.Lock()
	before := a.failing[key]
	delete(a.failing, key)
	a.mu.Unlock()
	a.decrement(before, nil)
}

func (a *audit) setLocked(key types.NamespacedName, now map[string]bool) {
	if len(now) == 0 {
		delete(a.failing, key)
		return
	}
	a.failing[key] = now
}

func (a *audit) decrement(before, now map[string]bool) {
	for rule := range before {
		if !now[rule] {
			metrics.RuleViolations.WithLabelValues(rule, a.kind).Dec()
		}
	}
}

func describeMissing(v rules.Violation) string {
	var parts []string
	if len(v.MissingLabels) > 0 {
		parts = append(parts, fmt.Sprintf("missing labels %s", strings.Join(v.MissingLabels, ", ")))
	}
	if len(v.MissingAnnotations) > 0 {
		parts = append(parts, fmt.Sprintf("missing annotations %s", strings.Join(v.MissingAnnotations, ", ")))
	}
	return strings.Join(parts, "; ")
}
