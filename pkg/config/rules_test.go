package config_test

import (
	"strings"
	"testing"
)

const ruleWatches = "watches:\n- kind: Pod\n  labelSelector: app=web\n- kind: Node\n- kind: Deployment\n"

func TestRuleValidation(t *testing.T) {
	cases := map[string]struct {
		rules string
		want  []string // empty: valid
	}{
		"the documented examples": {rules: `
- name: team-from-namespace
  kinds: [Pod, Deployment]
  match: {labelSelector: "!metawatch.dev/skip"}
  copyFromNamespace: {labels: [team, cost-center]}
- name: spot-nodes
  kinds: [Node]
  match: {labelSelector: "node.kubernetes.io/capacity-type=spot"}
  setLabels: {example.com/spot: "true"}
- name: require-owner
  kinds: [Deployment]
  requireLabels: [app.kubernetes.io/name, team]
`},
		"two rules agreeing on a value": {rules: "- {name: a, kinds: [Node], setLabels: {x: \"1\"}}\n- {name: b, kinds: [Node], setLabels: {x: \"1\"}}\n"},
		"missing name":                  {rules: "- {kinds: [Pod], setLabels: {x: v}}\n", want: []string{"rules[0].name: Invalid value"}},
		"duplicate name": {
			rules: "- {name: a, kinds: [Pod], setLabels: {x: v}}\n- {name: a, kinds: [Node], setLabels: {x: v}}\n",
			want:  []string{`rules[1].name: Duplicate value: "a"`},
		},
		"no kinds":            {rules: "- {name: a, setLabels: {x: v}}\n", want: []string{"rules[0].kinds: Required value"}},
		"a kind not watched":  {rules: "- {name: a, kinds: [Secret], setLabels: {x: v}}\n", want: []string{`rules[0].kinds[0]: Invalid value: "Secret": not a watched kind`}},
		"no action":           {rules: "- {name: a, kinds: [Pod]}\n", want: []string{"rules[0]: Required value: a rule needs an action"}},
		"bad match selector":  {rules: "- {name: a, kinds: [Pod], match: {labelSelector: 'x in ('}, setLabels: {x: v}}\n", want: []string{`rules[0].match.labelSelector: Invalid value: "x in ("`}},
		"invalid label value": {rules: "- {name: a, kinds: [Pod], setLabels: {team: 'not valid!'}}\n", want: []string{`rules[0].setLabels[team]: Invalid value: "not valid!"`}},
		"an unquoted YAML boolean as a value": {
			rules: "- {name: a, kinds: [Node], setLabels: {example.com/spot: true}}\n",
			want:  []string{"rules[0].setLabels[example.com/spot] (line 7): expected a string, found true or false: quote it"},
		},
		"invalid label key":      {rules: "- {name: a, kinds: [Pod], setLabels: {'bad key': x}}\n", want: []string{`rules[0].setLabels[bad key]: Invalid value: "bad key": key:`}},
		"invalid annotation key": {rules: "- {name: a, kinds: [Pod], setAnnotations: {'-x': v}}\n", want: []string{"rules[0].setAnnotations"}},
		"invalid remove key":     {rules: "- {name: a, kinds: [Pod], removeLabels: ['a/b/c']}\n", want: []string{`rules[0].removeLabels[0]: Invalid value: "a/b/c"`}},
		"empty copy":             {rules: "- {name: a, kinds: [Pod], copyFromNamespace: {}}\n", want: []string{"rules[0].copyFromNamespace: Required value"}},
		"conflicting set values": {
			rules: "- {name: a, kinds: [Node], setLabels: {tier: gold}}\n- {name: b, kinds: [Node, Pod], setLabels: {tier: silver}}\n",
			want:  []string{`rules[1].setLabels[tier]: Invalid value: "tier": rule "b" sets it to "silver" on Node, but rules[0].setLabels[tier] (rule "a") sets it to "gold"`},
		},
		"set against remove": {
			rules: "- {name: a, kinds: [Pod], setLabels: {tier: gold}}\n- {name: b, kinds: [Pod], removeLabels: [tier]}\n",
			want:  []string{`rule "b" removes it on Pod`, `(rule "a") sets it to "gold"`},
		},
		"copy from the owner": {rules: "- {name: a, kinds: [Pod], copyFromOwner: {kinds: [Deployment, CronJob], labels: [cost-center], annotations: [example.com/owner]}}\n"},
		"copy from an owner kind metawatch does not follow": {
			rules: "- {name: a, kinds: [Pod], copyFromOwner: {kinds: [Service], labels: [team]}}\n",
			want:  []string{`rules[0].copyFromOwner.kinds[0]: Unsupported value: "Service": supported values: "CronJob", "DaemonSet", "Deployment", "Job", "ReplicaSet", "StatefulSet"`},
		},
		"copy from the owner without kinds": {
			rules: "- {name: a, kinds: [Pod], copyFromOwner: {labels: [team]}}\n",
			want:  []string{"rules[0].copyFromOwner.kinds: Required value: the owner kinds to copy from"},
		},
		"copy from the owner without keys": {
			rules: "- {name: a, kinds: [Pod], copyFromOwner: {kinds: [Deployment]}}\n",
			want:  []string{"rules[0].copyFromOwner: Required value: the owner's labels or annotations to copy"},
		},
		"one key copied from the namespace and from the owner": {
			rules: "- {name: a, kinds: [Pod], copyFromNamespace: {labels: [team]}}\n- {name: b, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [team]}}\n",
			want:  []string{`rules[1].copyFromOwner.labels[0]: Invalid value: "team": rule "b" copies it from the owner on Pod, but rules[0].copyFromNamespace.labels[0] (rule "a") copies it from the namespace: one key must not be written two ways`},
		},
		"one key set and copied from the owner": {
			rules: "- {name: a, kinds: [Pod], setLabels: {team: red}, copyFromOwner: {kinds: [Deployment], labels: [team]}}\n",
			want:  []string{"one key must not be written two ways"},
		},
		"one key copied from owners by two rules": {
			rules: "- {name: a, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [team]}}\n- {name: b, kinds: [Pod], copyFromOwner: {kinds: [StatefulSet], labels: [team]}}\n",
			want:  []string{`rule "b" copies it from the owner on Pod`},
		},
		"set and copy in one rule": {
			rules: "- {name: a, kinds: [Pod], setLabels: {team: x}, copyFromNamespace: {labels: [team]}}\n",
			want:  []string{"one key must not be written two ways"},
		},
		"a write that leaves the watch": {
			rules: "- {name: a, kinds: [Pod], setLabels: {app: db}}\n",
			want:  []string{`rules[0].setLabels[app]: Invalid value: "app": the rule sets it to "db", which changes whether objects match the Pod watch's labelSelector "app=web"`},
		},
		"a removal that leaves the watch": {
			rules: "- {name: a, kinds: [Pod], removeLabels: [app]}\n",
			want:  []string{"rules[0].removeLabels[0]", "loop"},
		},
		"a copy of a key the watch selects on": {
			rules: "- {name: a, kinds: [Pod], copyFromNamespace: {labels: [app]}}\n",
			want:  []string{"rules[0].copyFromNamespace.labels[0]", "loop"},
		},
		"set and copy from the namespace at creation": {
			rules: "- {name: a, kinds: [Pod, Deployment], atCreation: true, match: {labelSelector: 'tier in (web), !skip'}, setLabels: {x: v}, copyFromNamespace: {labels: [team]}, requireLabels: [owner]}\n",
		},
		"at creation with nothing it can apply then": {
			rules: "- {name: a, kinds: [Pod], atCreation: true, requireLabels: [team]}\n",
			want:  []string{"rules[0].atCreation: Invalid value: true: applies setLabels, setAnnotations and copyFromNamespace as objects are created, and this rule has none of them"},
		},
		"at creation with a removal and a copy from the owner": {
			rules: "- {name: a, kinds: [Pod], atCreation: true, setLabels: {x: v}, removeLabels: [old], copyFromOwner: {kinds: [Deployment], labels: [team]}}\n",
			want: []string{"rules[0].atCreation: Invalid value: true: only setLabels, setAnnotations and copyFromNamespace are applied at creation, and this rule also has removeLabels, which only the controller does: move removeLabels into a rule of its own",
				"also has copyFromOwner"},
		},
		"at creation with a numeric match": {
			rules: "- {name: a, kinds: [Pod], atCreation: true, match: {labelSelector: 'gen>3'}, setLabels: {x: v}}\n",
			want:  []string{`rules[0].match.labelSelector: Invalid value: "gen>3": with atCreation, the match is evaluated at admission, where a numeric comparison (> or <, on gen) has no equivalent`},
		},
		"at creation with a name too long for the policy": {
			rules: "- {name: " + strings.Repeat("a", 244) + ", kinds: [Pod], atCreation: true, setLabels: {x: v}}\n",
			want:  []string{"rules[0].name: Invalid value", "shorten the name to 243 characters"},
		},
		"a write that keeps matching the watch": {rules: "- {name: a, kinds: [Pod], setLabels: {app: web}}\n"},
		"a write that stops matching its own match": {
			rules: "- {name: a, kinds: [Node], match: {labelSelector: '!done'}, setLabels: {done: 'yes'}}\n",
			want:  []string{"rules[0].setLabels[done]", `the rule's own match.labelSelector "!done"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { parsesOrSays(t, ruleWatches+"rules:\n"+tc.rules, tc.want) })
	}
}
