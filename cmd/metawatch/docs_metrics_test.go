package main_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	promclient "github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	_ "github.com/metawatch/metawatch/pkg/telemetry" // registers metawatch's metrics on ctrlmetrics.Registry
)

// metricsPage is where every metric metawatch serves has its row.
const metricsPage = "../../docs/metrics.md"

// Every metawatch_ metric the product defines has a row in docs/metrics.md,
// and every metawatch_ name the docs mention is one it defines (no stale rows).
func TestEveryMetricIsInTheMetricsPage(t *testing.T) {
	defined := definedMetrics(t)
	firstCells := tableFirstCells(t, metricsPage)
	for _, name := range slices.Sorted(maps.Keys(defined)) {
		if !regexp.MustCompile("(?m)^`" + regexp.QuoteMeta(name) + "[{`]").MatchString(firstCells) {
			t.Errorf("%s (defined in %s) has no row in docs/metrics.md's table: add one "+
				"(| `%s{labels}` | what it counts |)", name, defined[name], name)
		}
	}
	for _, page := range docPages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range regexp.MustCompile(`metawatch_[a-z0-9_]*[a-z0-9]`).FindAllString(string(data), -1) {
			if _, ok := defined[name]; !ok {
				t.Errorf("%s names %s, which metawatch does not define: fix the name or remove it", page, name)
			}
		}
	}
}

// definedMetrics is every metawatch_ metric the product's code defines (the
// prometheus *Opts literals of pkg/ and cmd/, outside tests), with where. The
// registry alone would not do: a vector with no series yet is not gathered.
// So the registry checks the scan instead: every metawatch_ family it gathers
// must have been found, or the scan has a blind spot.
func definedMetrics(t *testing.T) map[string]string {
	t.Helper()
	defined := map[string]string{}
	for _, root := range []string{"../../pkg", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			for _, name := range metricNamesIn(t, path) {
				defined[name] = strings.TrimPrefix(path, "../../")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if _, ok := defined[f.GetName()]; strings.HasPrefix(f.GetName(), "metawatch_") && !ok {
			t.Errorf("the registry serves %s, which the source scan did not find: teach definedMetrics its form", f.GetName())
		}
	}
	if len(defined) == 0 {
		t.Fatal("no metawatch_ metric found in pkg/ or cmd/: the scan is broken")
	}
	return defined
}

// metricNamesIn is the metawatch_ names of the prometheus.*Opts literals of a Go file.
func metricNamesIn(t *testing.T, path string) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || !isPrometheusOpts(lit.Type) {
			return true
		}
		parts := map[string]string{}
		for _, elt := range lit.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			key, _ := kv.Key.(*ast.Ident)
			if !ok || key == nil || (key.Name != "Namespace" && key.Name != "Subsystem" && key.Name != "Name") {
				continue
			}
			value, ok := kv.Value.(*ast.BasicLit)
			if !ok || value.Kind != token.STRING {
				t.Errorf("%s: a metric's %s is not a string literal, so the docs test cannot read it: write it as one", path, key.Name)
				continue
			}
			parts[key.Name], _ = strconv.Unquote(value.Value)
		}
		if name := promclient.BuildFQName(parts["Namespace"], parts["Subsystem"], parts["Name"]); strings.HasPrefix(name, "metawatch_") {
			names = append(names, name)
		}
		return true
	})
	return names
}

// isPrometheusOpts tells prometheus.CounterOpts, GaugeOpts, HistogramOpts, ... apart.
func isPrometheusOpts(expr ast.Expr) bool {
	sel, ok := expr.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "prometheus" && strings.HasSuffix(sel.Sel.Name, "Opts")
}
