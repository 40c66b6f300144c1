package acceptance_test

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/acceptance"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Accept takes the controller's steps in order and stops at the first that
// refuses the configuration, with that step's error and what the steps
// before it found (Passed says how far it got); a watch the identity may
// not list is set aside, not refused.
func TestAcceptStopsAtTheStepThatRefuses(t *testing.T) {
	controlplane.SkipIfShort(t)
	atCreation := config.DefaultGuardrails() // as --allow-at-creation
	atCreation.AtCreation = true
	cases := map[string]struct {
		as         string // the user to impersonate; empty: the tests' own, who may do anything
		config     string
		guardrails *config.Guardrails
		wantPassed acceptance.Step
		want       []string // the refusal says these; empty: accepted
		// what the steps passed found
		wantWatches, wantRules, wantAllowed, wantForbidden int
	}{
		"an unknown kind": {
			config: "watches:\n- kind: Podz\n",
			want:   []string{`watches[0].kind: Invalid value: "Podz"`},
		},
		"beyond the guardrails (nil: the defaults)": {
			config:     "watches:\n- kind: Pod\n- kind: Node\nrules:\n- {name: spot, kinds: [Node], setLabels: {example.com/spot: 'true'}}\n",
			wantPassed: acceptance.Resolved, wantWatches: 2,
			want: []string{`rule "spot" may not write Node: --writable-kinds allows Pod,Deployment`},
		},
		"an admission policy over the API server's CEL limit": {
			config: "watches:\n- kind: Pod\nrules:\n- {name: notes, kinds: [Pod], atCreation: true, setAnnotations: {example.com/notes: " +
				strings.Repeat("x", 120_000) + "}}\n",
			guardrails: &atCreation, wantPassed: acceptance.Guarded, wantWatches: 1,
			want: []string{`rule "notes": the CEL expression of setAnnotations[example.com/notes] is 120`},
		},
		"a field selector the server rejects": {
			config:     "watches:\n- kind: Pod\n  fieldSelector: spec.priority=7\n",
			wantPassed: acceptance.Sized, wantWatches: 1,
			want: []string{`watches[0].fieldSelector "spec.priority=7"`, "rejects it for Pod"},
		},
		"a watch the identity may not list is set aside": {
			as: "metawatch-test-nobody", config: "watches:\n- kind: Secret\n  namespaces: [default]\n",
			wantPassed: acceptance.Listed, wantWatches: 1, wantForbidden: 1,
		},
		"accepted, with its admission rules": {
			config:     "watches:\n- kind: Pod\n- kind: Namespace\nrules:\n- {name: team, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}\n",
			guardrails: &atCreation, wantPassed: acceptance.Listed, wantWatches: 2, wantRules: 1, wantAllowed: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			conf, err := config.Parse([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			cfg := cp.Config
			if tc.as != "" {
				cfg = rest.CopyConfig(cp.Config)
				cfg.Impersonate = rest.ImpersonationConfig{UserName: tc.as}
			}
			a, _, err := acceptance.Accept(t.Context(), cfg, conf, tc.guardrails)
			testkit.WantInvalid(t, err, tc.want...)
			if a.Passed != tc.wantPassed {
				t.Errorf("passed step %d, want %d", a.Passed, tc.wantPassed)
			}
			got := [4]int{len(a.Watches), len(a.AdmissionRules), len(a.Allowed), len(a.Forbidden)}
			if want := [4]int{tc.wantWatches, tc.wantRules, tc.wantAllowed, tc.wantForbidden}; got != want {
				t.Errorf("watches, admission rules, allowed, forbidden: %v, want %v", got, want)
			}
			for _, f := range a.Forbidden {
				if !strings.Contains(f.Err.Error(), "forbidden to list secrets in namespace default") {
					t.Errorf("the forbidden watch says %q", f.Err)
				}
			}
		})
	}
}
