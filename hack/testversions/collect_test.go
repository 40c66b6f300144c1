package main

import (
	"io"
	"strings"
	"testing"
)

// go test -json as written is counted per package: top-level tests in the
// counts, each skip and failure (subtests too) with the last line it wrote.
func TestCollectorCountsAndReasons(t *testing.T) {
	for name, c := range map[string]struct {
		stream                  string
		passed, failed, skipped int
		notes                   string
	}{
		"a skip keeps its reason": {stream: `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: Kubernetes v1.35.4 has no X (from 1.36)\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p"}
`, skipped: 1, notes: "skip TestA: a_test.go:9: Kubernetes v1.35.4 has no X (from 1.36)"},
		"a failed subtest is noted, its parent counted once": {stream: `{"Action":"output","Package":"p","Test":"TestB/one","Output":"    b_test.go:3: got 1, want 2\n"}
{"Action":"fail","Package":"p","Test":"TestB/one"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestC"}
{"Action":"fail","Package":"p"}
`, passed: 1, failed: 1, notes: "fail TestB/one: b_test.go:3: got 1, want 2|fail TestB: (no reason written)"},
		"a line that is not JSON is passed on, not counted": {stream: "# p\nfoo.go:1: undefined: x\n", notes: ""},
	} {
		t.Run(name, func(t *testing.T) {
			col := newCollector(io.Discard)
			// written in two pieces: a line may arrive split.
			half := len(c.stream) / 2
			_, _ = col.Write([]byte(c.stream[:half]))
			_, _ = col.Write([]byte(c.stream[half:]))
			var p packageResult
			for _, got := range col.packages() {
				p = got
			}
			var notes []string
			for _, n := range p.Skips {
				notes = append(notes, "skip "+n.Test+": "+n.Why)
			}
			for _, n := range p.Failures {
				notes = append(notes, "fail "+n.Test+": "+n.Why)
			}
			if p.Passed != c.passed || p.Failed != c.failed || p.Skipped != c.skipped || strings.Join(notes, "|") != c.notes {
				t.Errorf("got %d/%d/%d %q, want %d/%d/%d %q", p.Passed, p.Failed, p.Skipped, strings.Join(notes, "|"),
					c.passed, c.failed, c.skipped, c.notes)
			}
		})
	}
}
