package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
)

func TestParseRejectsBadConfigsNamingTheField(t *testing.T) {
	cases := map[string]struct {
		yaml string
		want []string // every part must be in the error
	}{
		"empty file":            {yaml: "", want: []string{"configuration is empty"}},
		"only a comment":        {yaml: "# nothing\n", want: []string{"watches: Required value"}},
		"no watches":            {yaml: "watches: []\n", want: []string{"watches: Required value"}},
		"not YAML":              {yaml: "watches: [kind: Pod\n", want: []string{"decoding configuration", "yaml"}},
		"not a mapping":         {yaml: "- kind: Pod\n", want: []string{"decoding configuration"}},
		"unknown top-level key": {yaml: "watchs:\n- kind: Pod\n", want: []string{`unknown field "watchs"`}},
		"unknown watch field": {
			yaml: "watches:\n- kind: Pod\n  labelSelctor: app=web\n",
			want: []string{`unknown field "watches[0].labelSelctor"`},
		},
		"a key in the wrong case": {
			yaml: "watches:\n- Kind: Pod\n",
			want: []string{`unknown field "watches[0].Kind"`},
		},
		"a duplicate key": {
			yaml: "watches:\n- kind: Pod\n  kind: Node\n",
			want: []string{`"kind" already set`},
		},
		"missing kind": {yaml: "watches:\n- namespaces: [a]\n", want: []string{"watches[0].kind: Required value"}},
		"bad label selector": {
			yaml: "watches:\n- kind: Pod\n- kind: Node\n- kind: Deployment\n  labelSelector: team in (a\n",
			want: []string{`watches[2].labelSelector: Invalid value: "team in (a"`, "unable to parse requirement"},
		},
		"bad label value in selector": {
			yaml: "watches:\n- kind: Pod\n  labelSelector: team=not a value\n",
			want: []string{`watches[0].labelSelector: Invalid value: "team=not a value"`},
		},
		"bad field selector": {
			yaml: "watches:\n- kind: Pod\n  fieldSelector: status.phase\n",
			want: []string{`watches[0].fieldSelector: Invalid value: "status.phase"`, "invalid selector"},
		},
		"invalid namespace": {
			yaml: "watches:\n- kind: Pod\n  namespaces: [shop, Not_A_Namespace]\n",
			want: []string{`watches[0].namespaces[1]: Invalid value: "Not_A_Namespace"`, "RFC 1123"},
		},
		"duplicate namespace": {
			yaml: "watches:\n- kind: Pod\n  namespaces: [shop, shop]\n",
			want: []string{`watches[0].namespaces[1]: Duplicate value: "shop"`},
		},
		"duplicate kind": {
			yaml: "watches:\n- kind: Pod\n- kind: Node\n- kind: Pod\n  labelSelector: app=web\n",
			want: []string{`watches[2].kind: Duplicate value: "Pod"`, "watches[0] already watches this kind"},
		},
		"bad apiVersion": {
			yaml: "watches:\n- kind: Deployment\n  apiVersion: apps/v1/extra\n",
			want: []string{`watches[0].apiVersion: Invalid value: "apps/v1/extra"`},
		},
		"a bad keepAnnotations key": {
			yaml: "watches:\n- kind: Pod\ncache: {keepAnnotations: ['*', 'bad key']}\n",
			want: []string{`cache.keepAnnotations[0]: Invalid value: "bad key"`},
		},
		"every error at once": {
			yaml: "watches:\n- kind: Pod\n  labelSelector: '!!'\n- kind: Node\n  fieldSelector: x\n",
			want: []string{"watches[0].labelSelector", "watches[1].fieldSelector"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", tc.yaml)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseAcceptsTheDocumentedFields(t *testing.T) {
	c, err := config.Parse([]byte(`
watches:
- kind: Pod
  namespaces: [shop]
  labelSelector: "app.kubernetes.io/part-of=shop"
  fieldSelector: "status.phase!=Succeeded"
- kind: Deployment
  apiVersion: apps/v1
- kind: Node
`))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Watch{Kind: "Pod", Namespaces: []string{"shop"}, LabelSelector: "app.kubernetes.io/part-of=shop", FieldSelector: "status.phase!=Succeeded"}
	if len(c.Watches) != 3 || c.Watches[0].Kind != want.Kind || c.Watches[0].Namespaces[0] != "shop" ||
		c.Watches[0].LabelSelector != want.LabelSelector || c.Watches[0].FieldSelector != want.FieldSelector || c.Watches[1].APIVersion != "apps/v1" {
		t.Errorf("parsed %+v", c.Watches)
	}
}

func TestParseFile(t *testing.T) {
	cases := map[string]struct {
		content string
		watches int
		wantErr string
	}{
		"a bare configuration": {content: "watches:\n- kind: Pod\n", watches: 1},
		"a ConfigMap manifest": {
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: metawatch-selectors}\ndata:\n  config.yaml: |\n    watches:\n    - kind: Pod\n    - kind: Node\n",
			watches: 2,
		},
		"a ConfigMap without the data key": {
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata:\n  config.yml: |\n    watches: [{kind: Pod}]\n",
			wantErr: `has no data key "config.yaml"`,
		},
		"a ConfigMap whose configuration is wrong": {
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata:\n  config.yaml: |\n    watches: [{kind: Pod, labelSelector: 'a in ('}]\n",
			wantErr: "watches[0].labelSelector",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := config.ParseFile(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseFile error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Watches) != tc.watches {
				t.Errorf("%d watches, want %d", len(c.Watches), tc.watches)
			}
		})
	}
}

func TestTheShippedSelectorsParseAndResolve(t *testing.T) {
	matches, err := filepath.Glob("../../selectors/*.yaml")
	if err != nil || len(matches) == 0 {
		t.Fatalf("no selectors found: %v", err)
	}
	mapper := newMapper(t)
	// Within the default guardrails, but for the Node rules of spot-nodes.yaml
	// and the atCreation of team-at-creation.yaml, which say what the
	// operator must allow for them.
	limits := config.DefaultGuardrails()
	limits.WritableKinds = append(limits.WritableKinds, "Node")
	limits.AtCreation = true
	for _, path := range matches {
		c, err := config.ParseFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		watches, _, err := config.Resolve(c, mapper)
		if err != nil {
			t.Errorf("%s: resolving against the API server: %v", path, err)
			continue
		}
		if err := limits.Check(c, config.ResolvedScope(watches)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}
