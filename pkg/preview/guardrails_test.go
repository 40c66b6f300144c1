package preview_test

import (
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
)

// check --objects says what the guardrails keep metawatch from writing, as
// the controller decides it: a key it owns on a kind no longer writable, or
// one since protected, is left, not released.
func TestPreviewLeavesWhatTheGuardrailsForbid(t *testing.T) {
	owned := "\n  managedFields:\n  - {manager: metawatch, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, " +
		`fieldsV1: {"f:metadata": {"f:labels": {"f:team": {}, "f:pod-template-hash": {}}}}}` + "\n"
	podOnly := config.DefaultLimits()
	podOnly.WritableKinds = []string{"Pod"}
	cases := map[string]struct {
		limits    config.Limits
		config    string
		objects   string
		want, not []string
	}{
		"a Deployment after --writable-kinds=Pod, with an audit rule on it: its keys stay": {
			limits:  podOnly,
			config:  "watches: [{kind: Deployment}]\nrules: [{name: req, kinds: [Deployment], requireLabels: [owner]}]\n",
			objects: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  labels: {team: red, pod-template-hash: x}" + owned,
			want:    []string{"left: would release label team, but --writable-kinds does not allow Deployment: left as it is", "violation: rule req"},
			not:     []string{"would release label team (was"},
		},
		"a protected key metawatch owns is kept, the other released": {
			limits:  config.DefaultLimits(),
			config:  "watches: [{kind: Pod}]\nrules: [{name: req, kinds: [Pod], requireLabels: [owner]}]\n",
			objects: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n  labels: {team: red, pod-template-hash: x}" + owned,
			want:    []string{"would release label team", "left: would release label pod-template-hash, but --protected-keys protects it: left as it is"},
			not:     []string{"would release label pod-template-hash (was"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { checkReport(t, tc.config, tc.objects, &tc.limits, tc.want, tc.not) })
	}
}
