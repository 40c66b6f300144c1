package admission_test

import (
	"testing"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

func TestLeftoversSayWhatRemainsOncePerReason(t *testing.T) {
	type set struct{ part, reason, problem string }
	for name, tc := range map[string]struct {
		sets      []set
		ready     bool
		forbidden float64 // metawatch_admission_cleanup_blocked{reason=forbidden}
		dryRun    float64
		events    int
	}{
		"nothing left is ready and quiet":         {sets: []set{{"limits", "", ""}}, ready: true},
		"RBAC keeping pairs fails readiness":      {sets: []set{{"limits", admission.BlockedForbidden, "p"}}, forbidden: 1, events: 1},
		"a dry run's pairs do not fail readiness": {sets: []set{{"limits", admission.BlockedDryRun, "p"}}, ready: true, dryRun: 1, events: 1},
		"the same problem again is one Event": {sets: []set{{"limits", admission.BlockedForbidden, "p"}, {"limits", admission.BlockedForbidden, "p"}},
			forbidden: 1, events: 1},
		"one part clearing leaves the other's": {sets: []set{{"limits", admission.BlockedForbidden, "p"}, {"configuration", admission.BlockedForbidden, "q"},
			{"limits", "", ""}}, forbidden: 1, events: 2},
		"every part clearing clears the metric": {sets: []set{{"configuration", admission.BlockedForbidden, "q"}, {"configuration", "", ""}}, ready: true, events: 1},
	} {
		t.Run(name, func(t *testing.T) {
			events := 0
			l := &admission.Leftovers{OnChange: func(string) { events++ }}
			for _, s := range tc.sets {
				l.Set(s.part, s.reason, s.problem)
			}
			if ready := l.Ready() == nil; ready != tc.ready {
				t.Errorf("ready = %t (%v), want %t", ready, l.Ready(), tc.ready)
			}
			for reason, want := range map[string]float64{admission.BlockedForbidden: tc.forbidden, admission.BlockedDryRun: tc.dryRun} {
				if got := testkit.Metric(t, "metawatch_admission_cleanup_blocked", map[string]string{"reason": reason}); got != want {
					t.Errorf("metawatch_admission_cleanup_blocked{reason=%s} = %v, want %v", reason, got, want)
				}
			}
			if events != tc.events {
				t.Errorf("%d Events, want %d", events, tc.events)
			}
		})
	}
}
