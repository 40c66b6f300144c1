package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action, Package, Test, Output string
}

// packageResult is one suite's outcome on one version.
type packageResult struct {
	Name                    string
	Passed, Failed, Skipped int
	// Skips and Failures name a test each, with the line that says why.
	Skips, Failures []testNote
	// Result is the package's own pass or fail.
	Result string
}

type testNote struct{ Test, Why string }

// collector reads go test -json as it is written, and tells the progress
// (each package's result, each failed test) on progress.
type collector struct {
	progress io.Writer
	partial  []byte
	byName   map[string]*packageResult
	order    []string
	// lines keeps each running test's last output lines: a skip's or a
	// failure's reason is the last one before its --- line.
	lines map[string][]string
}

func newCollector(progress io.Writer) *collector {
	return &collector{progress: progress, byName: map[string]*packageResult{}, lines: map[string][]string{}}
}

func (c *collector) Write(p []byte) (int, error) {
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := c.partial[:i]
		var e event
		if json.Unmarshal(line, &e) == nil && e.Package != "" {
			c.add(e)
		} else if len(bytes.TrimSpace(line)) > 0 {
			fmt.Fprintf(c.progress, "%s\n", line) // a build error, not JSON
		}
		c.partial = c.partial[i+1:]
	}
}

func (c *collector) pkg(name string) *packageResult {
	if p, ok := c.byName[name]; ok {
		return p
	}
	p := &packageResult{Name: name}
	c.byName[name] = p
	c.order = append(c.order, name)
	return p
}

func (c *collector) add(e event) {
	p := c.pkg(e.Package)
	key := e.Package + " " + e.Test
	switch e.Action {
	case "output":
		if e.Test != "" {
			c.lines[key] = lastLines(append(c.lines[key], strings.TrimRight(e.Output, "\n")), 8)
		}
	case "pass", "fail", "skip":
		if e.Test == "" {
			p.Result = e.Action
			fmt.Fprintf(c.progress, "test-versions: %s %s\n", e.Action, e.Package)
			return
		}
		c.finish(p, e, reason(c.lines[key]))
		delete(c.lines, key)
	}
}

// finish counts a test: top-level tests in the counts, every skip and
// failure (subtests too) in the notes.
func (c *collector) finish(p *packageResult, e event, why string) {
	top := !strings.Contains(e.Test, "/")
	switch e.Action {
	case "pass":
		if top {
			p.Passed++
		}
	case "fail":
		if top {
			p.Failed++
		}
		p.Failures = append(p.Failures, testNote{e.Test, why})
		fmt.Fprintf(c.progress, "test-versions: FAIL %s %s: %s\n", e.Package, e.Test, why)
	case "skip":
		if top {
			p.Skipped++
		}
		p.Skips = append(p.Skips, testNote{e.Test, why})
	}
}

func lastLines(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// reason is the last line a test wrote before its --- line, trimmed.
func reason(lines []string) string {
	for _, l := range slices.Backward(lines) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "=== ") {
			continue
		}
		return l
	}
	return "(no reason written)"
}

func (c *collector) packages() []packageResult {
	out := make([]packageResult, 0, len(c.order))
	for _, name := range c.order {
		out = append(out, *c.byName[name])
	}
	return out
}

func (c *collector) anyFailed() bool {
	for _, p := range c.byName {
		if p.Failed > 0 {
			return true
		}
	}
	return false
}

func multiWriter(ws ...io.Writer) io.Writer { return io.MultiWriter(ws...) }
