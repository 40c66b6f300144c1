package report

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// earlierRuns is the section that links the runs kept in dir's
// subdirectories (each a page of its own, named by its date), newest first,
// each with the line that says when and on what it was measured: the page
// users land on stays the current run, and older ones stay one click away.
func earlierRuns(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "README.md")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	var b strings.Builder
	b.WriteString("\n## Earlier runs\n\nEach is the whole page of an earlier run, as it was measured; where this page has the same figure, this one is current.\n\n")
	for _, name := range names {
		fmt.Fprintf(&b, "- [%s](%s/README.md): %s\n", name, name, summaryOf(filepath.Join(dir, name, "README.md")))
	}
	return b.String()
}

// summaryOf is the sizes and scenarios line of a page, shortened to its
// first sentence.
func summaryOf(page string) string {
	data, err := os.ReadFile(page)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "Sizes ") {
			first, _, _ := strings.Cut(line, "; ")
			return first + "."
		}
	}
	return ""
}
