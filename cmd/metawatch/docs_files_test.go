package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fileMapHeading opens the part of a package doc that says which file holds
// what.
const fileMapHeading = "// # Where things are"

// namedFile is a file name, or a glob of them (memory_*.go), in a doc.
var namedFile = regexp.MustCompile(`[a-z0-9_*]+\.go\b`)

// A package doc that maps its files (a "Where things are" section) names
// every file of the package but doc.go, by name or by a glob, and no file
// that is not there: a map that leaves files out, or names files gone, is
// worse than none.
func TestDocsOfPackagesMapEveryFile(t *testing.T) {
	docs, err := filepath.Glob("../../pkg/*/doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		at := strings.Index(string(text), fileMapHeading)
		if at < 0 {
			continue
		}
		named := namedFile.FindAllString(string(text[at:]), -1)
		dir := filepath.Dir(doc)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			base := filepath.Base(f)
			if base == "doc.go" || strings.HasSuffix(base, "_test.go") {
				continue
			}
			if !anyMatches(named, base) {
				t.Errorf("%s maps its files but does not name %s", doc, base)
			}
		}
		for _, n := range named {
			if matches, _ := filepath.Glob(filepath.Join(dir, n)); len(matches) == 0 {
				t.Errorf("%s names %s, which the package does not have", doc, n)
			}
		}
	}
}

func anyMatches(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}
