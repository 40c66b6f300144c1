package rulecontroller

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// metawatch_rule_objects_off has a series per namespace for the first
// namespaces of a kind, and one for all the others: its size is bounded
// however many namespaces hold objects off. Counts follow the objects.
func TestObjectsOffAreBoundedByNamespace(t *testing.T) {
	telemetry.ObjectsOff.Reset()
	au := NewAudits(true).forKind(schema.GroupVersionKind{Kind: "Bounded"}, nil, nil)
	held := map[string]bool{"team": true}
	n := telemetry.OtherNamespacesAfter + 50
	for i := range n {
		au.observeHeld(types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i), Name: "p"}, "", held)
	}
	series := testutil.CollectAndCount(telemetry.ObjectsOff)
	if series != telemetry.OtherNamespacesAfter+1 {
		t.Errorf("%d series for %d namespaces, want %d (the first %d, and one for the others)", series, n, telemetry.OtherNamespacesAfter+1, telemetry.OtherNamespacesAfter)
	}
	other := telemetry.ObjectsOff.WithLabelValues("team", "Bounded", telemetry.OtherNamespaces, reasonHeld)
	if got := testutil.ToFloat64(other); got != 50 {
		t.Errorf("the others count %v objects, want 50", got)
	}
	au.forget(types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", n-1), Name: "p"})
	au.observeHeld(types.NamespacedName{Namespace: "ns-0", Name: "p"}, "", nil)
	if got := testutil.ToFloat64(other); got != 49 {
		t.Errorf("after one of theirs went, the others count %v, want 49", got)
	}
	if got := testutil.ToFloat64(telemetry.ObjectsOff.WithLabelValues("team", "Bounded", "ns-0", reasonHeld)); got != 0 {
		t.Errorf("ns-0 counts %v after its object is no longer held, want 0", got)
	}
}
