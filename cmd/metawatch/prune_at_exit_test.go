package main_test

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A restart with --allow-at-creation=false and a configuration with
// atCreation is refused at start-up (no --wait-for-config): before it
// exits, a single replica deletes the installation's pairs; a replica that
// never held the Lease may not, and its exit message gives the kubectl line.
func TestARejectedStartUpStillJudgesThePairs(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	path := writeConfig(t, "watches:\n- kind: Pod\nrules:\n- {name: exit-tier, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}\n")
	leader := []string{"--leader-elect", "--leader-election-namespace", "default"}
	for name, tc := range map[string]struct {
		args         []string
		installation string
		deleted      bool
	}{
		"a single replica deletes them":           {installation: "file " + path, deleted: true},
		"a replica under leader election says so": {args: leader, installation: "Lease default/" + metamanager.DefaultLeaderElectionID},
	} {
		t.Run(name, func(t *testing.T) {
			rule := "exit-" + map[bool]string{true: "single", false: "leader"}[tc.deleted]
			leavePair(t, c, rule, tc.installation)
			stderr, err := runToExit(t, append([]string{"--config-file", path}, tc.args...)...)
			if err == nil || !strings.Contains(stderr, "invalid configuration") {
				t.Fatalf("exit %v, want an invalid configuration; stderr:\n%s", err, stderr)
			}
			var p admissionregistrationv1.MutatingAdmissionPolicy
			gone := client.IgnoreNotFound(c.Get(t.Context(), client.ObjectKey{Name: admission.Name(rule)}, &p)) == nil && p.Name == ""
			switch {
			case tc.deleted && !gone:
				t.Errorf("the pair is still there after the exit; stderr:\n%s", stderr)
			case !tc.deleted && gone:
				t.Error("a replica without the Lease deleted the pair")
			case !tc.deleted && !strings.Contains(stderr, admission.DeleteCommand(tc.installation)):
				t.Errorf("the exit message lacks %q; stderr:\n%s", admission.DeleteCommand(tc.installation), stderr)
			}
		})
	}
}

// leavePair makes rule's pair as the installation configured by source
// would have, before this start-up.
func leavePair(t *testing.T, c client.Client, rule, source string) {
	t.Helper()
	pods := admission.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespaced: true}
	policy, binding, err := admission.Policy(admission.Rule{Name: rule, Resources: []admission.Resource{pods}, SetLabels: map[string]string{"tier": "gold"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{policy, binding} {
		obj.GetLabels()[admission.InstallationLabel] = admission.InstallationValue(source)
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		testkit.DeleteAtCleanup(t, c, obj)
	}
}
