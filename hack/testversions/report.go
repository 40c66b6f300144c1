package main

import (
	"fmt"
	"path"
	"runtime"
	"strings"
	"time"
)

// versionResult is one version's build and suites.
type versionResult struct {
	Version      string
	Build, Tests time.Duration
	Packages     []packageResult
	// Err is what stopped the version before its tests said anything.
	Err string
}

type report struct {
	Date     time.Time
	Took     time.Duration
	Suites   []string
	Versions []versionResult
}

func (r report) allPassed() bool {
	for _, v := range r.Versions {
		if v.Err != "" {
			return false
		}
		for _, p := range v.Packages {
			if p.Failed > 0 || p.Result == "fail" {
				return false
			}
		}
	}
	return true
}

// markdown is the table of versions × suites (passed / failed / skipped
// top-level tests), then each version's skips and failures with their reasons.
func (r report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# make test-versions, %s\n\n", r.Date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "%d CPUs, %s; took %s in all. Cells: top-level tests passed / failed / skipped.\n\n",
		runtime.NumCPU(), runtime.Version(), r.Took.Round(time.Second))
	b.WriteString("| version | build | tests |")
	for _, s := range r.Suites {
		fmt.Fprintf(&b, " %s |", path.Base(s))
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(r.Suites)) + "\n")
	for _, v := range r.Versions {
		fmt.Fprintf(&b, "| %s | %s | %s |", v.Version, v.Build.Round(time.Second), v.Tests.Round(time.Second))
		for _, s := range r.Suites {
			b.WriteString(" " + cell(v, s) + " |")
		}
		b.WriteString("\n")
	}
	for _, v := range r.Versions {
		notes(&b, v)
	}
	return b.String()
}

func cell(v versionResult, suite string) string {
	if v.Err != "" {
		return "not run"
	}
	for _, p := range v.Packages {
		if path.Base(p.Name) == path.Base(suite) {
			s := fmt.Sprintf("%d / %d / %d", p.Passed, p.Failed, p.Skipped)
			if p.Failed > 0 || p.Result == "fail" {
				s = "**" + s + " FAIL**"
			}
			return s
		}
	}
	return "not run"
}

func notes(b *strings.Builder, v versionResult) {
	fmt.Fprintf(b, "\n## %s\n\n", v.Version)
	if v.Err != "" {
		fmt.Fprintf(b, "Stopped: %s\n", v.Err)
		return
	}
	noted := false
	for _, p := range v.Packages {
		for _, n := range p.Failures {
			fmt.Fprintf(b, "- FAIL %s %s: %s\n", path.Base(p.Name), n.Test, n.Why)
			noted = true
		}
		for _, n := range p.Skips {
			fmt.Fprintf(b, "- skip %s %s: %s\n", path.Base(p.Name), n.Test, n.Why)
			noted = true
		}
	}
	if !noted {
		b.WriteString("Every test passed; none skipped.\n")
	}
}
