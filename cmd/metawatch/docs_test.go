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

// Every flag of metawatch --help has a row in the README's flags table.
func TestEveryFlagIsInTheREADME(t *testing.T) {
	help, err := exec.Command(metawatchBinary(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	readme := section(t, "../../README.md", "## Flags\n")
	for _, m := range regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		if !strings.Contains(readme, "`"+m[1]+"`") {
			t.Errorf("%s is not in the README's flags table", m[1])
		}
	}
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

// section is the text of a Markdown file from heading to the next heading of its level.
func section(t *testing.T, path, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	start := strings.Index(s, heading)
	if start < 0 {
		t.Fatalf("%s has no %q", path, strings.TrimSpace(heading))
	}
	s = s[start+len(heading):]
	if end := strings.Index(s, "\n"+strings.Fields(heading)[0]+" "); end >= 0 {
		s = s[:end]
	}
	return s
}
