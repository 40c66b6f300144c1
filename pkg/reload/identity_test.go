package reload_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Two installations on default flags (field manager metawatch), each
// following its own ConfigMap and setting its own key on the same pods:
// one sees changes under its name that it did not make, stops writing, and
// says so: a FieldManagerShared Event on its ConfigMap with the fix, its
// readiness check failing with the same, and the metric.
func TestTwoInstallationsOnDefaultFlagsSayTheySharedAName(t *testing.T) {
	c := testkit.Populated(t, cp, "shared-pods", nil, 20)
	configs := map[string]string{"shared-a": "example.com/team-a", "shared-b": "example.com/team-b"}
	instances := map[string]*instance{}
	for ns, key := range configs {
		testkit.Namespace(t, c, ns, nil)
		kubectlApply(t, selectors(ns, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [shared-pods]\nrules:\n- {name: mark, kinds: [Pod], setLabels: {%s: \"yes\"}}\n", key)))
		instances[ns] = startInstance(t, cp.Config, ns+"/selectors")
	}
	var said string
	waitEvery(t, "an installation to say it shares its field manager", testkit.Timeout, func() bool {
		for ns := range configs {
			if eventWith(t, c, ns, "FieldManagerShared", "give each installation its own --field-manager") {
				said = ns
			}
		}
		return said != ""
	})
	if body := instances[said].readiness(); !strings.Contains(body, `another writer applies as field manager "metawatch"`) {
		t.Errorf("/readyz/configuration of %s = %q, want it failing with the shared name", said, body)
	}
	if v := testkit.Metric(t, "metawatch_field_manager_shared", nil); v != 1 {
		t.Errorf("metawatch_field_manager_shared = %g, want 1", v)
	}
}
