package access_test

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Check turns what an informer would retry forever into an error that names
// the watch, the field and the fix, and tells a forbidden watch (served
// around) from a broken one (the configuration is rejected).
func TestCheckNamesTheWatchAndTheFix(t *testing.T) {
	controlplane.SkipIfShort(t)
	nobody := rest.CopyConfig(cp.Config)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "metawatch-test-nobody"}
	cases := map[string]struct {
		cfg           *rest.Config
		config        string
		wantErr       []string
		wantForbidden []string
	}{
		"a field the kind does not support": {
			cfg:     cp.Config,
			config:  "watches:\n- kind: Namespace\n- kind: Pod\n  fieldSelector: spec.priority=7\n",
			wantErr: []string{`watches[1].fieldSelector "spec.priority=7"`, "rejects it for Pod"},
		},
		"an identity RBAC forbids to list": {
			cfg:           nobody,
			config:        "watches:\n- kind: Secret\n  namespaces: [default]\n",
			wantForbidden: []string{"watches[0] (Secret)", "forbidden to list secrets in namespace default", "grant the identity list and watch on secrets"},
		},
		"a valid watch": {cfg: cp.Config, config: "watches:\n- kind: Pod\n  fieldSelector: spec.nodeName=node-1\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			watches := testkit.Resolve(t, cp.Config, tc.config)
			allowed, forbidden, err := access.Check(t.Context(), tc.cfg, watches)
			assertContains(t, "error", err, tc.wantErr)
			var forbiddenErr error
			if len(forbidden) == 1 {
				forbiddenErr = forbidden[0].Err
			} else if len(forbidden) > 1 {
				t.Fatalf("%d forbidden watches, want at most 1", len(forbidden))
			}
			assertContains(t, "forbidden watch", forbiddenErr, tc.wantForbidden)
			if len(tc.wantErr) == 0 && len(allowed)+len(forbidden) != len(watches) {
				t.Errorf("%d allowed + %d forbidden of %d watches", len(allowed), len(forbidden), len(watches))
			}
		})
	}
}

func assertContains(t *testing.T, what string, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected %s: %v", what, err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no %s, want one with %q", what, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s %q does not contain %q", what, err, w)
		}
	}
}

// Check fails the configuration only for what the configuration gets
// wrong (a selector the server rejects: invalid); a watch the identity may
// not list is forbidden, alone, with the namespace it may not list, and the
// others stay allowed; a server that is not there fails the check, but is
// not the configuration's fault.
func TestCheckTellsForbiddenFromInvalidFromUnreachable(t *testing.T) {
	controlplane.SkipIfShort(t)
	grant(t, "access-check-a", "access-checker", listPods)
	testkit.Namespace(t, testkit.Client(t, cp.Config), "access-check-b", nil)
	cases := map[string]struct {
		cfg           *rest.Config
		config        string
		wantAllowed   []string // the kinds allowed
		wantForbidden string   // the forbidden watch's error says it
		wantInvalid   bool
		wantFailed    bool // an error that is not the configuration's fault
	}{
		"a namespace of two the identity may not list is forbidden": {
			cfg: as("access-checker"), config: "watches:\n- kind: Pod\n  namespaces: [access-check-a, access-check-b]\n",
			wantForbidden: "forbidden to list pods in namespace access-check-b",
		},
		"a kind it may not list is forbidden, the other allowed": {
			cfg: as("access-checker"), config: "watches:\n- kind: Pod\n  namespaces: [access-check-a]\n- kind: Secret\n  namespaces: [access-check-a]\n",
			wantAllowed: []string{"Pod"}, wantForbidden: "watches[1] (Secret): forbidden to list secrets in namespace access-check-a",
		},
		"a cluster-wide watch it may not list says cluster-wide": {
			cfg: as("access-checker"), config: "watches:\n- kind: Pod\n",
			wantForbidden: "forbidden to list pods cluster-wide",
		},
		"a field selector the server rejects is invalid": {
			cfg: cp.Config, config: "watches:\n- kind: Pod\n  fieldSelector: spec.priority=7\n", wantInvalid: true,
		},
		"a server that is not there fails, not as invalid": {
			cfg: nowhere(t), config: "watches:\n- kind: Pod\n", wantFailed: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			allowed, forbidden, err := access.Check(t.Context(), tc.cfg, testkit.Resolve(t, cp.Config, tc.config))
			if got := config.IsInvalid(err); got != tc.wantInvalid || (err != nil) != (tc.wantInvalid || tc.wantFailed) {
				t.Fatalf("Check returned %v (invalid configuration: %v); want invalid %v, failed %v", err, got, tc.wantInvalid, tc.wantFailed)
			}
			var kinds []string
			for _, w := range allowed {
				kinds = append(kinds, w.GVK.Kind)
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tc.wantAllowed) {
				t.Errorf("allowed %v, want %v", kinds, tc.wantAllowed)
			}
			switch {
			case tc.wantForbidden == "" && len(forbidden) > 0:
				t.Errorf("forbidden %v, want none", forbidden)
			case tc.wantForbidden != "" && (len(forbidden) != 1 || !apierrors.IsForbidden(forbidden[0].Err) || !strings.Contains(forbidden[0].Err.Error(), tc.wantForbidden)):
				t.Errorf("forbidden %v, want one watch whose 403 says %q", forbidden, tc.wantForbidden)
			}
		})
	}
}
