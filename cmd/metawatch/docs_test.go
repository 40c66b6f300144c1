package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Every flag of metawatch --help has a row in the flags page's table: its
// first cell names the flag (alone, or with the flags it goes with).
func TestEveryFlagIsInTheFlagsPage(t *testing.T) {
	help, err := exec.Command(metawatchBinary(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	firstCells := tableFirstCells(t, "../../docs/flags.md")
	for _, m := range regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		if !strings.Contains(firstCells, "`"+m[1]+"`") {
			t.Errorf("%s has no row in docs/flags.md's table: add one (| `%s` | default | what it does |)", m[1], m[1])
		}
	}
}

// tableFirstCells is the first cell of every table row of a Markdown file,
// one a line: where a page names what its tables list.
func tableFirstCells(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	var cells []string
	for _, line := range strings.Split(string(data), "\n") {
		if row := tableCells(line); len(row) > 0 {
			cells = append(cells, row[0])
		}
	}
	return strings.Join(cells, "\n")
}

// metawatchBinary is TestMain's binary, or under -short (make verify-docs,
// no control plane) one built for this test.
func metawatchBinary(t *testing.T) string {
	if bin != "" {
		return bin
	}
	path, remove, err := testkit.Build(".", "metawatch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	return path
}

// Every package under pkg/ has its row in ARCHITECTURE.md's map.
func TestEveryPackageIsOnTheMap(t *testing.T) {
	dirs, err := os.ReadDir("../../pkg")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !regexp.MustCompile("(?m)^\\|[^|\\n]*`pkg/"+regexp.QuoteMeta(d.Name())+"`").Match(data) {
			t.Errorf("pkg/%s has no row in ARCHITECTURE.md's package table", d.Name())
		}
	}
}

// tableCells is the cells of a Markdown table row, trimmed; nil for a line that
// is not one. An escaped bar (\|, as in `a\|b`) stays in its cell.
func tableCells(line string) []string {
	if !strings.HasPrefix(line, "|") {
		return nil
	}
	const bar = "\x00"
	fields := strings.Split(strings.ReplaceAll(line, `\|`, bar), "|")
	if len(fields) < 3 {
		return nil
	}
	cells := make([]string, 0, len(fields)-2)
	for _, f := range fields[1 : len(fields)-1] {
		cells = append(cells, strings.TrimSpace(strings.ReplaceAll(f, bar, `\|`)))
	}
	return cells
}
