package preview_test

import (
	"fmt"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// check --objects says what the guardrails keep metawatch from writing, as
// the controller decides it, for labels and annotations alike: a key it owns
// on a kind no longer writable, or one since protected, is left, not
// released.
func TestPreviewLeavesWhatTheGuardrailsForbid(t *testing.T) {
	podOnly := config.DefaultGuardrails()
	podOnly.WritableKinds = []string{"Pod"}
	for typeName, kt := range testkit.KeyTypes {
		t.Run(typeName, func(t *testing.T) {
			keys := fmt.Sprintf("  %s: {team: red, pod-template-hash: x}\n", kt.Field)
			owned := "  managedFields:\n  - {manager: metawatch, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, " +
				fmt.Sprintf(`fieldsV1: {"f:metadata": {"f:%s": {"f:team": {}, "f:pod-template-hash": {}}}}}`, kt.Field) + "\n"
			cases := map[string]struct {
				limits    config.Guardrails
				config    string
				objects   string
				want, not []string
			}{
				"a Deployment after --writable-kinds=Pod, with an audit rule on it: its keys stay": {
					limits:  podOnly,
					config:  "watches: [{kind: Deployment}]\nrules: [{name: req, kinds: [Deployment], requireLabels: [owner]}]\n",
					objects: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n" + keys + owned,
					want:    []string{"left: would release " + kt.Name + " team, but --writable-kinds does not allow Deployment: left as it is", "violation: rule req"},
					not:     []string{"would release " + kt.Name + " team (was"},
				},
				"a protected key metawatch owns is kept, the other released": {
					limits:  config.DefaultGuardrails(),
					config:  "watches: [{kind: Pod}]\nrules: [{name: req, kinds: [Pod], requireLabels: [owner]}]\n",
					objects: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n" + keys + owned,
					want:    []string{"would release " + kt.Name + " team", "left: would release " + kt.Name + " pod-template-hash, but --protected-keys protects it: left as it is"},
					not:     []string{"would release " + kt.Name + " pod-template-hash (was"},
				},
			}
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) { checkReport(t, tc.config, tc.objects, &tc.limits, tc.want, tc.not) })
			}
		})
	}
}
