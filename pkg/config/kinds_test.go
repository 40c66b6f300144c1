package config_test

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
)

const (
	appsDeployment = "- kind: Deployment\n"
	evilDeployment = "- {kind: Deployment, apiVersion: evil.example.com/v1}\n"
	widget         = "- {kind: Widget, apiVersion: example.com/v1}\n"
)

// A rule's kinds name one watch each: Kind alone the built-in kind, never a
// custom resource of that name; Kind.group the kind of that group.
func TestRuleKindsNameOneWatch(t *testing.T) {
	for name, tc := range map[string]struct {
		watches, kinds string
		want           []string // empty: valid
	}{
		"a built-in kind by its name":                  {appsDeployment, "[Deployment]", nil},
		"a built-in kind with its group":               {appsDeployment, "[Deployment.apps]", nil},
		"a group in capitals is the same group":        {appsDeployment, "[Deployment.Apps]", nil},
		"a custom kind with its group":                 {evilDeployment, "[Deployment.evil.example.com]", nil},
		"a custom kind no built-in kind is called":     {widget, "[Widget]", nil},
		"a custom kind with its group, name not built": {widget, "[Widget.example.com]", nil},
		"a built-in name alone never names a custom kind": {evilDeployment, "[Deployment]", []string{
			`rules[0].kinds[0]: Invalid value: "Deployment": names the built-in Deployment (Deployment alone never names a custom resource), which no watch watches; ` +
				"watches[0] watches Deployment.evil.example.com: write Deployment.evil.example.com to apply the rule to it"}},
		"a name two watches of different groups share": {appsDeployment + evilDeployment, "[Deployment]", []string{
			`rules[0].kinds[0]: Invalid value: "Deployment": Deployment is the kind of watches[0] Deployment and watches[1] Deployment.evil.example.com, of different API groups`,
			"remove the watches of Deployment no rule should write"}},
		"a name two watches share, with its group": {appsDeployment + evilDeployment, "[Deployment.apps]", []string{
			`rules[0].kinds[0]: Invalid value: "Deployment.apps": Deployment is the kind of watches[0] Deployment and watches[1] Deployment.evil.example.com`}},
		"a kind watched twice": {appsDeployment + "- {kind: Deployment, apiVersion: apps/v1}\n", "[Deployment]", []string{
			`rules[0].kinds[0]: Invalid value: "Deployment": Deployment is watched twice (watches[0] Deployment and watches[1] Deployment): merge the watches`}},
		"a group no watch has": {appsDeployment, "[Deployment.evil.example.com]", []string{
			"names Deployment of API group evil.example.com, which no watch watches; watches[0] watches Deployment: write Deployment"}},
		"one watch named twice": {appsDeployment, "[Deployment, Deployment.apps]", []string{
			`rules[0].kinds[1]: Duplicate value: "Deployment.apps"`}},
		"a group that is no DNS name": {appsDeployment, "[Deployment.a_b]", []string{`"a_b" is not an API group`}},
	} {
		t.Run(name, func(t *testing.T) {
			parsesOrSays(t, "watches:\n"+tc.watches+"rules:\n- {name: r, kinds: "+tc.kinds+", setLabels: {example.com/x: v}}\n", tc.want)
		})
	}
}

// The operator's --writable-kinds, checked against a rule's kinds with
// their groups: a name alone allows the built-in kind only.
func TestWritableKindsHaveGroups(t *testing.T) {
	for name, tc := range map[string]struct {
		watches, kinds string
		flags          []string
		want           string // "": within the limits
	}{
		"a built-in kind by its name":    {appsDeployment, "[Deployment]", []string{"--writable-kinds=Deployment"}, ""},
		"a built-in kind with its group": {appsDeployment, "[Deployment]", []string{"--writable-kinds=Deployment.apps"}, ""},
		"a custom kind with its group":   {evilDeployment, "[Deployment.evil.example.com]", []string{"--writable-kinds=Deployment.evil.example.com"}, ""},
		"a custom kind and the wildcard": {widget, "[Widget]", []string{"--writable-kinds=*"}, "offline whether it is namespaced is unknown"},
		"a custom kind the built-in's name does not allow": {evilDeployment, "[Deployment.evil.example.com]", []string{"--writable-kinds=Deployment"},
			`rules[0].kinds[0]: Forbidden: rule "r" may not write Deployment.evil.example.com: --writable-kinds allows Deployment; name Deployment.evil.example.com in --writable-kinds`},
		"the built-in kind a custom kind's group does not allow": {appsDeployment, "[Deployment]", []string{"--writable-kinds=Deployment.evil.example.com"},
			`rule "r" may not write Deployment: --writable-kinds allows Deployment.evil.example.com; name Deployment in --writable-kinds`},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte("watches:\n" + tc.watches + "rules:\n- {name: r, kinds: " + tc.kinds + ", setLabels: {example.com/x: v}}\n"))
			if err != nil {
				t.Fatal(err)
			}
			limits := guardrailsFromFlags(t, tc.flags...)
			err = limits.Check(c, config.OfflineScope(c))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want no error, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
}

func TestWritableKindsFlagTakesGroups(t *testing.T) {
	for name, tc := range map[string]struct{ arg, want string }{
		"a built-in kind":                {"--writable-kinds=Deployment", ""},
		"a kind with its group":          {"--writable-kinds=Widget.example.com", ""},
		"a custom kind without group":    {"--writable-kinds=Widget", `"Widget" is not a built-in kind, and a kind's name alone names a built-in kind only: name a custom resource with its API group, as kubectl writes it, e.g. Widget.example.com`},
		"a group that is not a DNS name": {"--writable-kinds=Widget.Ex_ample", `"Ex_ample" is not an API group`},
	} {
		t.Run(name, func(t *testing.T) {
			err := bindLimitFlags(new(config.Guardrails), tc.arg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want no error, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
}
