package admission

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/labels"
)

// evalSelector evaluates the selector's CEL on an object with objLabels
// (nil: an object without labels), as the API server's CEL does.
func evalSelector(t *testing.T, expr string, objLabels map[string]string) bool {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType))
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
	metadata := map[string]any{}
	if objLabels != nil {
		l := map[string]any{}
		for k, v := range objLabels {
			l[k] = v
		}
		metadata["labels"] = l
	}
	out, _, err := prg.Eval(map[string]any{"object": map[string]any{"metadata": metadata}})
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return out.Value() == true
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
