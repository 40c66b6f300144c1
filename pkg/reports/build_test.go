package reports

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/metawatch/metawatch/pkg/authority"
)

func TestBuilder(t *testing.T) {
	id := Names{Identity: authority.NewIdentity("metawatch/ms/mw", "")}
	finding := func(ns, name string, result Result) Finding {
		return Finding{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, Rule: "team", Check: CheckRequired, Result: result}
	}
	for name, tc := range map[string]struct {
		findings   []Finding
		passed     map[string]int
		max        int
		namespaces []string // the reports, in order
		cluster    bool
		summary    map[string][2]int // namespace → fail, warn
		results    map[string]int
		omitted    map[string]int
	}{
		"one report per namespace with results, one cluster report": {
			findings:   []Finding{finding("a", "p1", Fail), finding("b", "p1", Warn), finding("", "node-1", Fail)},
			namespaces: []string{"a", "b"}, cluster: true,
			summary: map[string][2]int{"a": {1, 0}, "b": {0, 1}, "": {1, 0}}, results: map[string]int{"a": 1, "b": 1, "": 1},
		},
		"passes alone make no report": {
			findings: []Finding{finding("a", "p1", Fail)}, passed: map[string]int{"a": 9, "quiet": 100},
			namespaces: []string{"a"}, summary: map[string][2]int{"a": {1, 0}}, results: map[string]int{"a": 1},
		},
		"results beyond the bound are counted, not listed": {
			findings: func() []Finding {
				var out []Finding
				for i := range 25 {
					out = append(out, finding("a", fmt.Sprintf("p%02d", i), Warn))
				}
				return append(out, finding("a", "z-last", Fail))
			}(),
			max: 10, namespaces: []string{"a"}, summary: map[string][2]int{"a": {1, 25}}, results: map[string]int{"a": 10}, omitted: map[string]int{"a": 16},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := &Builder{Names: id, MaxResults: tc.max, Now: time.Unix(100, 0)}
			for _, f := range tc.findings {
				b.Add(f)
			}
			for ns, n := range tc.passed {
				b.Passed(ns, n)
			}
			namespaced, cluster := b.Reports()
			var got []string
			for _, r := range namespaced {
				got = append(got, r.Namespace)
				if r.Name != id.Name() || r.Labels[LabelInstallation] != id.Installation() {
					t.Errorf("report %s/%s labels %v: want the identity's name and labels", r.Namespace, r.Name, r.Labels)
				}
				if s := tc.summary[r.Namespace]; r.Summary.Fail != s[0] || r.Summary.Warn != s[1] || r.Summary.Pass != tc.passed[r.Namespace] {
					t.Errorf("%s: summary %+v, want fail %d warn %d pass %d", r.Namespace, r.Summary, s[0], s[1], tc.passed[r.Namespace])
				}
				if len(r.Results) != tc.results[r.Namespace] {
					t.Errorf("%s: %d results, want %d", r.Namespace, len(r.Results), tc.results[r.Namespace])
				}
				if n, _ := strconv.Atoi(r.Annotations[AnnotationOmitted]); n != tc.omitted[r.Namespace] {
					t.Errorf("%s: %d omitted, want %d", r.Namespace, n, tc.omitted[r.Namespace])
				}
				if len(r.Results) > 0 && tc.summary[r.Namespace][0] > 0 && r.Results[0].Result != Fail {
					t.Errorf("%s: first result %s, want the fails first (kept over warns)", r.Namespace, r.Results[0].Result)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.namespaces) {
				t.Errorf("reports in %v, want %v", got, tc.namespaces)
			}
			if (cluster != nil) != tc.cluster {
				t.Errorf("cluster report %v, want %v", cluster != nil, tc.cluster)
			}
		})
	}
}

// FuzzBuilder: whatever the findings, a report lists at most its bound,
// its summary counts every finding, and what it lists plus what it omits
// is every one.
func FuzzBuilder(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7}, uint8(3))
	f.Add([]byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, bound uint8) {
		b := &Builder{MaxResults: int(bound%8) + 1}
		fails, warns := map[string]int{}, map[string]int{}
		for i, d := range data {
			ns := fmt.Sprintf("ns-%d", d%3)
			result := Warn
			if d%2 == 0 {
				result = Fail
				fails[ns]++
			} else {
				warns[ns]++
			}
			b.Add(Finding{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("p-%d", i), Rule: "r", Result: result})
		}
		namespaced, _ := b.Reports()
		for _, r := range namespaced {
			omitted, _ := strconv.Atoi(r.Annotations[AnnotationOmitted])
			if len(r.Results) > b.MaxResults || r.Summary.Fail != fails[r.Namespace] || r.Summary.Warn != warns[r.Namespace] ||
				len(r.Results)+omitted != fails[r.Namespace]+warns[r.Namespace] {
				t.Fatalf("%s: %d results (bound %d), %d omitted, summary %+v; want fail %d warn %d", r.Namespace, len(r.Results), b.MaxResults, omitted, r.Summary, fails[r.Namespace], warns[r.Namespace])
			}
			kept := 0
			for _, res := range r.Results {
				if res.Result == Fail {
					kept++
				}
			}
			if kept != min(fails[r.Namespace], b.MaxResults) {
				t.Fatalf("%s: %d fails listed, want %d: fails are kept before warns", r.Namespace, kept, min(fails[r.Namespace], b.MaxResults))
			}
		}
	})
}
