package admission

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metawatch/metawatch/pkg/config"
)

// evalCEL evaluates expr with vars (each a dynamic value), as the API
// server's CEL does, and reports whether it is true.
func evalCEL(t *testing.T, expr string, vars map[string]any) bool {
	t.Helper()
	var decls []cel.EnvOption
	for name := range vars {
		decls = append(decls, cel.Variable(name, cel.DynType))
	}
	env, err := cel.NewEnv(decls...)
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("%s: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return out.Value() == true
}

// evalSelector evaluates the selector's CEL on an object with objLabels
// (nil: an object without labels).
func evalSelector(t *testing.T, expr string, objLabels map[string]string) bool {
	t.Helper()
	metadata := map[string]any{}
	if objLabels != nil {
		l := map[string]any{}
		for k, v := range objLabels {
			l[k] = v
		}
		metadata["labels"] = l
	}
	return evalCEL(t, expr, map[string]any{"object": map[string]any{"metadata": metadata}})
}

func TestSelectorCELMatchesAsTheSelector(t *testing.T) {
	cases := map[string]struct {
		selector string
		labels   map[string]string
	}{
		"empty selector, no labels":      {selector: "", labels: nil},
		"equals, present":                {selector: "app=web", labels: map[string]string{"app": "web"}},
		"equals, other value":            {selector: "app=web", labels: map[string]string{"app": "db"}},
		"equals, no labels":              {selector: "app=web", labels: nil},
		"not equals, absent":             {selector: "app!=web", labels: map[string]string{"x": "y"}},
		"not equals, same":               {selector: "app!=web", labels: map[string]string{"app": "web"}},
		"in":                             {selector: "tier in (gold, silver)", labels: map[string]string{"tier": "silver"}},
		"notin, absent":                  {selector: "tier notin (gold)", labels: nil},
		"exists":                         {selector: "example.com/skip", labels: map[string]string{"example.com/skip": ""}},
		"does not exist":                 {selector: "!example.com/skip", labels: map[string]string{"app": "web"}},
		"two requirements, one fails":    {selector: "app=web,!example.com/skip", labels: map[string]string{"app": "web", "example.com/skip": "1"}},
		"two requirements, both hold":    {selector: "app=web,tier in (gold)", labels: map[string]string{"app": "web", "tier": "gold"}},
		"a value with a quote in a list": {selector: "a in (x, y)", labels: map[string]string{"a": `x"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assertSameVerdict(t, tc.selector, tc.labels)
		})
	}
}

// FuzzSelectorCEL: for any selector labels.Parse accepts and any labels, the
// policy's match condition says what the selector says.
func FuzzSelectorCEL(f *testing.F) {
	f.Add("app=web,!skip", "app=web")
	f.Add("tier in (a,b),x!=1", "tier=b,x=1")
	f.Add("k", "")
	f.Fuzz(func(t *testing.T, selector, objLabels string) {
		if _, err := labels.Parse(selector); err != nil {
			return
		}
		l := map[string]string{}
		for _, kv := range strings.Split(objLabels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = v
			}
		}
		assertSameVerdict(t, selector, l)
	})
}

func assertSameVerdict(t *testing.T, selector string, objLabels map[string]string) {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	expr, err := selectorCEL(sel)
	if err != nil {
		t.Skip(err) // an operator with no equivalent is refused, not mistranslated
	}
	if got, want := evalSelector(t, expr, objLabels), sel.Matches(labels.Set(objLabels)); got != want {
		t.Errorf("selector %q on %v: CEL %s says %v, the selector %v", selector, objLabels, expr, got, want)
	}
}

// evalScope evaluates the write scope's CEL on a request in namespace ns
// (for a Namespace, its own name; "" for another cluster-scoped object).
func evalScope(t *testing.T, expr, resource, ns string) bool {
	t.Helper()
	request := map[string]any{"resource": map[string]any{"group": "", "resource": resource}, "namespace": ns}
	name := "obj"
	if resource == "namespaces" {
		request["namespace"], name = "", ns
	}
	return evalCEL(t, expr, map[string]any{"request": request, "object": map[string]any{"metadata": map[string]any{"name": name}}})
}

func TestScopeCELAllowsWhatTheWriteScopeAllows(t *testing.T) {
	operator := &config.WriteScope{ExcludeNamespaces: []string{"kube-system"}}
	own := &config.WriteScope{Namespaces: []string{"shop", "kube-system", "web"}, ExcludeNamespaces: []string{"web"}}
	cases := map[string]struct {
		scopes       []*config.WriteScope
		resource, ns string
		want         bool
	}{
		"no scope allows every namespace":               {resource: "pods", ns: "any", want: true},
		"a pod in a listed namespace":                   {scopes: []*config.WriteScope{operator, own}, resource: "pods", ns: "shop", want: true},
		"a pod the operator excludes, listed by config": {scopes: []*config.WriteScope{operator, own}, resource: "pods", ns: "kube-system"},
		"a pod the config excludes":                     {scopes: []*config.WriteScope{operator, own}, resource: "pods", ns: "web"},
		"a pod in an unlisted namespace":                {scopes: []*config.WriteScope{nil, own}, resource: "pods", ns: "other"},
		"a Namespace is in its own namespace":           {scopes: []*config.WriteScope{operator}, resource: "namespaces", ns: "kube-system"},
		"a Namespace allowed by its name":               {scopes: []*config.WriteScope{own}, resource: "namespaces", ns: "shop", want: true},
		"another cluster-scoped object is not limited":  {scopes: []*config.WriteScope{own}, resource: "nodes", ns: "", want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := evalScope(t, scopeCEL(tc.scopes), tc.resource, tc.ns); got != tc.want {
				t.Errorf("CEL %s on %s in %q: %v, want %v", scopeCEL(tc.scopes), tc.resource, tc.ns, got, tc.want)
			}
		})
	}
}

// FuzzScopeCEL: for any two write scopes and namespace, the policy's scope
// condition allows a pod there exactly when both scopes do.
func FuzzScopeCEL(f *testing.F) {
	f.Add("a,b", "c", "", "b", "b")
	f.Add("", "kube-system", "x", "", "x")
	f.Fuzz(func(t *testing.T, include1, exclude1, include2, exclude2, ns string) {
		if ns == "" {
			return // a pod is always in a namespace
		}
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		scopes := []*config.WriteScope{{Namespaces: split(include1), ExcludeNamespaces: split(exclude1)}, {Namespaces: split(include2), ExcludeNamespaces: split(exclude2)}}
		want := scopes[0].Allows(ns) && scopes[1].Allows(ns)
		if got := evalScope(t, scopeCEL(scopes), "pods", ns); got != want {
			t.Errorf("scopes %+v %+v on %q: CEL %v, Allows %v", *scopes[0], *scopes[1], ns, got, want)
		}
	})
}
