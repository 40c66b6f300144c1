package engine_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/engine"
)

// Preflight turns what an informer would retry forever into an error that
// names the watch, the field and the fix.
func TestPreflightNamesTheWatchAndTheFix(t *testing.T) {
	nobody := rest.CopyConfig(cp.Config)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "metawatch-test-nobody"}
	cases := map[string]struct {
		cfg    *rest.Config
		config string
		want   []string
	}{
		"a field the kind does not support": {
			cfg:    cp.Config,
			config: "watches:\n- kind: Namespace\n- kind: Pod\n  fieldSelector: spec.priority=7\n",
			want:   []string{`watches[1].fieldSelector "spec.priority=7"`, "rejects it for Pod"},
		},
		"an identity RBAC forbids to list": {
			cfg:    nobody,
			config: "watches:\n- kind: Secret\n  namespaces: [default]\n",
			want:   []string{"watches[0] (Secret)", "forbidden to list secrets in namespace default", "grant the identity list and watch on secrets"},
		},
		"a valid watch": {cfg: cp.Config, config: "watches:\n- kind: Pod\n  fieldSelector: spec.nodeName=node-1\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := engine.Preflight(context.Background(), tc.cfg, resolve(t, tc.config))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Preflight: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Preflight passed, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
