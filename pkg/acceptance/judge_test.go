package acceptance_test

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/acceptance"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Offline judges a configuration as Accept does, without a cluster: the
// guardrails (nil: the defaults), then the admission policies' size, each
// refusal an invalid configuration naming the rule and what to change.
func TestOfflineJudgesAsTheControllerWould(t *testing.T) {
	atCreation := config.DefaultGuardrails() // as --allow-at-creation
	atCreation.AtCreation = true
	nodes := config.DefaultGuardrails() // as --writable-kinds=Pod,Node
	nodes.WritableKinds = []string{"Pod", "Node"}
	cases := map[string]struct {
		config     string
		guardrails *config.Guardrails
		want       []string // empty: accepted
	}{
		"within the default guardrails": {
			config: "watches:\n- kind: Pod\nrules:\n- {name: tier, kinds: [Pod], setLabels: {tier: gold}}\n",
		},
		"nil guardrails are the defaults": {
			config: "watches:\n- kind: Node\nrules:\n- {name: spot, kinds: [Node], setLabels: {example.com/spot: 'true'}}\n",
			want:   []string{`rules[0].kinds[0]: Forbidden: rule "spot" may not write Node: --writable-kinds allows Pod,Deployment`},
		},
		"what the operator allows": {
			config:     "watches:\n- kind: Node\nrules:\n- {name: spot, kinds: [Node], setLabels: {example.com/spot: 'true'}}\n",
			guardrails: &nodes,
		},
		"a protected key": {
			config: "watches:\n- kind: Pod\nrules:\n- {name: orphan, kinds: [Pod], removeLabels: [pod-template-hash]}\n",
			want:   []string{`rule "orphan" may not write pod-template-hash: --protected-keys protects it`},
		},
		"atCreation, not allowed": {
			config: "watches:\n- kind: Pod\nrules:\n- {name: team, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}\n",
			want:   []string{`rules[0].atCreation: Forbidden: rule "team" may not apply its keys at creation`},
		},
		"atCreation, allowed": {
			config:     "watches:\n- kind: Pod\nrules:\n- {name: team, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}\n",
			guardrails: &atCreation,
		},
		"atCreation over the API server's CEL limit": {
			config: "watches:\n- kind: Pod\nrules:\n- {name: notes, kinds: [Pod], atCreation: true, setAnnotations: {example.com/notes: " +
				strings.Repeat("x", 120_000) + "}}\n",
			guardrails: &atCreation,
			want:       []string{`rule "notes": the CEL expression of setAnnotations[example.com/notes] is 120`, "over the API server's limit"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			conf, err := config.Parse([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			testkit.WantInvalid(t, acceptance.Offline(conf, tc.guardrails), tc.want...)
		})
	}
}
