package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/bench/scenarios/fanout"
	"github.com/metawatch/metawatch/bench/scenarios/livereport"
)

// A page links the bench's guide by the path that works from the folder it is
// written to, and says how to run it again.
func TestThePageLinksTheGuideFromItsFolderAndSaysHowToRunIt(t *testing.T) {
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "bench", "README.md"), []byte("# bench\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	command := `make bench ARGS="--sizes 10000 --out bench/results"`
	for name, tc := range map[string]struct {
		dir, link string
	}{
		"the top-level results page":    {dir: filepath.Join(repo, "bench", "results"), link: "[bench/README.md](../README.md)"},
		"a dated page under it":         {dir: filepath.Join(repo, "bench", "results", "2026-11-21"), link: "[bench/README.md](../../README.md)"},
		"a page outside the repository": {dir: t.TempDir(), link: "described in bench/README.md."},
	} {
		t.Run(name, func(t *testing.T) {
			run := Run{Baseline: "metawatch", Options: Options{Sizes: []int{10_000}, Command: command},
				LiveReports: []livereport.Result{{Pods: 10_000, Tool: "metawatch", Seconds: 2}}}
			if err := Write(tc.dir, run); err != nil {
				t.Fatal(err)
			}
			page, err := os.ReadFile(filepath.Join(tc.dir, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(page), tc.link) {
				t.Errorf("the page does not have %q:\n%s", tc.link, page)
			}
			if !strings.Contains(string(page), "Run again with `"+command+"`.") {
				t.Errorf("the page does not say how to run it again:\n%s", page)
			}
		})
	}
}

// A page written where older runs are kept in dated folders links each of
// them, newest first, with what it measured; a folder without a page is not
// a run.
func TestThePageLinksTheEarlierRunsBesideIt(t *testing.T) {
	dir := t.TempDir()
	for name, sizes := range map[string]string{"2026-11-21": "[10000 50000 100000]", "2026-11-25-1m": "[10000 100000 1000000]"} {
		page := "# metawatch bench results\n\nMeasured ...\nSizes " + sizes + " pods (10000 per namespace), scenarios sync; churn ...\n"
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "README.md"), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "plots"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := Run{Baseline: "metawatch", Options: Options{Sizes: []int{10_000}}, LiveReports: []livereport.Result{{Pods: 10_000, Tool: "metawatch", Seconds: 2}}}
	if err := Write(dir, run); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "## Earlier runs\n\nEach is the whole page of an earlier run, as it was measured; where this page has the same figure, this one is current.\n\n" +
		"- [2026-11-25-1m](2026-11-25-1m/README.md): Sizes [10000 100000 1000000] pods (10000 per namespace), scenarios sync.\n" +
		"- [2026-11-21](2026-11-21/README.md): Sizes [10000 50000 100000] pods (10000 per namespace), scenarios sync.\n"
	if !strings.HasSuffix(string(page), want) {
		t.Errorf("the page does not end with the earlier runs:\n%s", page)
	}
}

// A page of the fanout scenario alone names the bare client as what its
// ratios are against, and none of the figures it did not take (churn,
// steady RSS); a page with the variants' own figures keeps them.
func TestTheHeaderNamesOnlyWhatTheRunMeasured(t *testing.T) {
	options := Options{Sizes: []int{10_000}, Scenarios: []string{"fanout"}, SteadySeconds: 15, ChurnSeconds: 30}
	for name, tc := range map[string]struct {
		run    Run
		want   []string
		absent []string
	}{
		"the fan-out alone": {run: Run{Baseline: "typed", Options: options, FanOuts: []fanout.Result{{N: 10_000, Variant: fanout.Bare, Seconds: 30}}},
			want: []string{"ratios are against `bare`"}, absent: []string{"`typed`", "churn", "Steady RSS"}},
		"the variants' own figures too": {run: Run{Baseline: "typed", Options: options, Results: []Result{{N: 10_000, Variant: "typed"}},
			FanOuts: []fanout.Result{{N: 10_000, Variant: fanout.Bare, Seconds: 30}}},
			want: []string{"ratios are against `typed`", "; churn", "Steady RSS"}},
	} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			header(&b, tc.run)
			checkPage(t, b.String(), tc.want, tc.absent)
		})
	}
}
