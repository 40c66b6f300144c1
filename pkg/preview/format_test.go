package preview_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/preview"
	"github.com/metawatch/metawatch/pkg/rules"
)

var shopPod = preview.Ref{Kind: "Pod", Namespace: "shop", Name: "p"}

// Each write reads as what metawatch would do to the key, its value before,
// its rule and where the value comes from, in words.
func TestAWriteSaysWhatWouldHappenToTheKey(t *testing.T) {
	cases := map[string]struct {
		write preview.Write
		want  string
	}{
		"a set of an absent key": {
			write: preview.Write{Map: "labels", Key: "tier", Action: "set", Value: "gold", Rule: "tier"},
			want:  `would set label tier="gold" (was absent; rule tier)`,
		},
		"a set of a copied value says its source": {
			write: preview.Write{Map: "labels", Key: "team", Action: "set", Value: "red", Was: "blue", Had: true, Rule: "copy", From: "Namespace shop"},
			want:  `would set label team="red" (was "blue"; rule copy, from Namespace shop)`,
		},
		"an empty value that was there is not absent": {
			write: preview.Write{Map: "annotations", Key: "note", Action: "set", Value: "x", Had: true, Rule: "n"},
			want:  `would set annotation note="x" (was ""; rule n)`,
		},
		"an adoption says the value is right": {
			write: preview.Write{Map: "labels", Key: "tier", Action: "adopt", Value: "gold", Was: "gold", Had: true, Rule: "tier"},
			want:  `would adopt label tier="gold" (rule tier): the value is right; metawatch takes ownership, as of a key set at admission`,
		},
		"a removal names its rule": {
			write: preview.Write{Map: "labels", Key: "legacy", Action: "remove", Was: "x", Had: true, Rule: "drop"},
			want:  `would remove label legacy (was "x"; rule drop)`,
		},
		"a release says why": {
			write: preview.Write{Map: "annotations", Key: "old", Action: "release", Was: "y", Had: true},
			want:  `would release annotation old (was "y"): metawatch set it and no rule wants it now`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.write.String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A report reads as one block per object: a skipped object in one line
// saying why; otherwise each rule's verdict, each write, conflict,
// violation, guardrail and note on its own line, and "nothing to change"
// when there is neither a write nor an offence.
func TestATextReportSaysEachFindingOnItsLine(t *testing.T) {
	cases := map[string]struct {
		report preview.Report
		want   []string // the lines of the block
	}{
		"a skipped object is one line": {
			report: preview.Report{Object: preview.Ref{Kind: "Node", Name: "n"}, Skipped: "the configuration watches no Node"},
			want:   []string{"Node/n: not looked at: the configuration watches no Node"},
		},
		"an object of a kind without rules changes nothing": {
			report: preview.Report{Object: shopPod},
			want:   []string{"Pod/shop/p:", "  no rule has kind Pod", "  nothing to change"},
		},
		"verdicts and a write": {
			report: preview.Report{Object: shopPod,
				Rules:  []preview.RuleVerdict{{Rule: "a", Applies: true, Why: "it has no match: every Pod"}, {Rule: "b", Why: `match.labelSelector "x" does not select the object`}},
				Writes: []preview.Write{{Map: "labels", Key: "k", Action: "set", Value: "v", Rule: "a"}}},
			want: []string{"Pod/shop/p:", "  rule a applies: it has no match: every Pod", `  rule b does not apply: match.labelSelector "x" does not select the object`,
				`  would set label k="v" (was absent; rule a)`},
		},
		"a conflict says how to take the key": {
			report: preview.Report{Object: shopPod, Conflicts: []preview.Conflict{{Map: "labels", Key: "tier", Want: "gold", Have: "silver", Manager: "kubectl-label", Rule: "tier"}}},
			want: []string{"Pod/shop/p:", "  no rule has kind Pod",
				`  conflict: rule tier wants label tier="gold", but field manager "kubectl-label" owns it with "silver": left as it is (force: true on the rule takes it)`},
		},
		"a violation lists the missing labels and annotations": {
			report: preview.Report{Object: shopPod, Violations: []rules.Violation{{Rule: "req", MissingLabels: []string{"team", "owner"}, MissingAnnotations: []string{"docs"}}}},
			want:   []string{"Pod/shop/p:", "  no rule has kind Pod", "  violation: rule req: missing label team, owner; missing annotation docs"},
		},
		"each guardrail names its flag": {
			report: preview.Report{Object: shopPod, Left: []rules.Left{
				{Map: config.Labels, Key: "a", Action: "release", Reason: config.RefusedKind},
				{Map: config.Labels, Key: "b", Action: "set", Rule: "r", Reason: config.RefusedNamespace},
				{Map: config.Annotations, Key: "c", Action: "remove", Rule: "r", Reason: config.RefusedProtected},
				{Map: config.Labels, Key: "kubernetes.io/d", Action: "set", Rule: "r", Reason: config.RefusedReserved}},
				Notes: []string{"Namespace shop is not among the objects"}},
			want: []string{"Pod/shop/p:", "  no rule has kind Pod",
				"  left: would release label a, but --writable-kinds does not allow Pod: left as it is",
				"  left: would set label b (rule r), but the namespace is outside the write scope: left as it is",
				"  left: would remove annotation c (rule r), but --protected-keys protects it: left as it is",
				"  left: would set label kubernetes.io/d (rule r), but it is under a prefix Kubernetes reserves, and --allowed-reserved-keys (with the rule's reservedKeys) does not allow it: left as it is",
				"  note: Namespace shop is not among the objects"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			if err := preview.WriteText(&out, []preview.Report{tc.report}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			want := append(slices.Clone(tc.want), summaryLine(preview.Summarize([]preview.Report{tc.report})))
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func summaryLine(s preview.Summary) string {
	return fmt.Sprintf("%d objects: %d would change, %d violate a requirement or conflict, %d not looked at", s.Objects, s.Change, s.Offend, s.Skipped)
}

// The summary counts each object once as skipped, or as changing and/or
// offending: a skipped object is neither, whatever else its report holds.
func TestTheSummaryCountsEachObjectOnce(t *testing.T) {
	write := []preview.Write{{Map: "labels", Key: "k", Action: "set"}}
	conflict := []preview.Conflict{{Map: "labels", Key: "k"}}
	cases := map[string]struct {
		reports []preview.Report
		want    preview.Summary
	}{
		"no reports count nothing":                {want: preview.Summary{}},
		"a write changes":                         {reports: []preview.Report{{Writes: write}}, want: preview.Summary{Objects: 1, Change: 1}},
		"a conflict offends":                      {reports: []preview.Report{{Conflicts: conflict}}, want: preview.Summary{Objects: 1, Offend: 1}},
		"a left key offends":                      {reports: []preview.Report{{Left: []rules.Left{{Key: "k"}}}}, want: preview.Summary{Objects: 1, Offend: 1}},
		"a write and a violation count in both":   {reports: []preview.Report{{Writes: write, Violations: []rules.Violation{{Rule: "r"}}}}, want: preview.Summary{Objects: 1, Change: 1, Offend: 1}},
		"a skipped object is only skipped":        {reports: []preview.Report{{Skipped: "why", Writes: write, Conflicts: conflict}}, want: preview.Summary{Objects: 1, Skipped: 1}},
		"an object with nothing to do is counted": {reports: []preview.Report{{}, {Writes: write}}, want: preview.Summary{Objects: 2, Change: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := preview.Summarize(tc.reports); got != tc.want {
				t.Errorf("Summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The JSON document holds every report as given and the summary of them,
// whether written at once or streamed one report at a time, and is valid
// JSON with no report at all.
func TestTheJSONDocumentHoldsTheReportsAndTheirSummary(t *testing.T) {
	cases := map[string][]preview.Report{
		"no report":  nil,
		"one report": {{Object: shopPod, Writes: []preview.Write{{Map: "labels", Key: "k", Action: "set", Value: "v", Rule: "r"}}}},
		"several reports": {
			{Object: shopPod, Rules: []preview.RuleVerdict{{Rule: "r", Applies: true, Why: "w"}}, Conflicts: []preview.Conflict{{Map: "labels", Key: "k", Want: "a", Have: "b", Manager: "m", Rule: "r"}}},
			{Object: preview.Ref{Kind: "Node", Name: "n"}, Skipped: "why"},
			{Object: shopPod, Violations: []rules.Violation{{Rule: "req", MissingLabels: []string{"team"}}}, Notes: []string{"n"}},
		},
	}
	for name, reports := range cases {
		t.Run(name, func(t *testing.T) {
			var whole bytes.Buffer
			if err := preview.WriteJSON(&whole, reports); err != nil {
				t.Fatal(err)
			}
			var streamed bytes.Buffer
			w := preview.NewWriter(&streamed, "json")
			for _, r := range reports {
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			summary, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			if whole.String() != streamed.String() {
				t.Errorf("streamed JSON differs from WriteJSON's:\n%s\n%s", streamed.String(), whole.String())
			}
			var doc struct {
				Reports []preview.Report `json:"reports"`
				Summary preview.Summary  `json:"summary"`
			}
			if err := json.Unmarshal(whole.Bytes(), &doc); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, whole.String())
			}
			if doc.Reports == nil || len(doc.Reports) != len(reports) || fmt.Sprint(doc.Reports) != fmt.Sprint(append([]preview.Report{}, reports...)) {
				t.Errorf("reports %+v, want %+v (and a list, never null)", doc.Reports, reports)
			}
			if want := preview.Summarize(reports); doc.Summary != want || summary != want {
				t.Errorf("summary in the document %+v, returned %+v; want %+v", doc.Summary, summary, want)
			}
		})
	}
}
