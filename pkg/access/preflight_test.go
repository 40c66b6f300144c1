package access_test

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/access"
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
