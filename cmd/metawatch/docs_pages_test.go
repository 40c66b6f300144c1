package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// maxLine is the length, in characters, a prose line or a table cell of the
// user docs stays under: pages read in a terminal and in a review diff.
const maxLine = 100

// docPages is the user docs: README.md and every page of docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, pages...)
}

// Every relative link of the user docs points at a file that exists, and an
// #anchor at a heading of that file.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)|^\[[^\]]+\]:\s*(\S+)`)
	for _, page := range docPages(t) {
		for _, line := range proseLines(t, page) {
			for _, m := range link.FindAllStringSubmatch(withoutCodeSpans(line.text), -1) {
				target := m[1] + m[2]
				if err := checkLink(page, target); err != "" {
					t.Errorf("%s:%d: link %s: %s", page, line.number, target, err)
				}
			}
		}
	}
}

// checkLink is "" for a link that resolves from page, else what is wrong.
func checkLink(page, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.Join(filepath.Dir(page), path)
	}
	if _, err := os.Stat(file); err != nil {
		return "no such file (paths are relative to the page)"
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(file, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	for _, a := range anchors(file) {
		if a == anchor {
			return ""
		}
	}
	return "no heading of " + filepath.Base(file) + " has that anchor"
}

// anchors is the anchors GitHub gives a Markdown file's headings: lower case,
// punctuation dropped, spaces as hyphens, a repeated one suffixed -1, -2, ...
func anchors(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	seen := map[string]int{}
	var out []string
	for _, line := range linesOutsideCode(string(data)) {
		title, ok := strings.CutPrefix(strings.TrimLeft(line.text, "#"), " ")
		if !strings.HasPrefix(line.text, "#") || !ok {
			continue
		}
		slug := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(title))
		if n := seen[slug]; n > 0 {
			out = append(out, slug+"-"+strconv.Itoa(n))
		} else {
			out = append(out, slug)
		}
		seen[slug]++
	}
	return out
}

// Every prose line of the user docs is under maxLine characters, and so is
// every table cell: the long explanation goes below the table. Lines in code
// blocks are exempt (commands and output are what they are), and so are link
// definitions ([name]: URL), since a URL cannot be wrapped.
func TestDocsLinesAreShort(t *testing.T) {
	for _, page := range docPages(t) {
		for _, line := range proseLines(t, page) {
			if cells := tableCells(line.text); cells != nil {
				for _, c := range cells {
					if n := utf8.RuneCountInString(c); n >= maxLine {
						t.Errorf("%s:%d: a table cell of %d characters (%.40q...): keep cells under %d, "+
							"the explanation below the table", page, line.number, n, c, maxLine)
					}
				}
				continue
			}
			if n := utf8.RuneCountInString(line.text); n >= maxLine && !linkDefinition.MatchString(line.text) {
				t.Errorf("%s:%d: a line of %d characters: wrap it under %d", page, line.number, n, maxLine)
			}
		}
	}
}

var linkDefinition = regexp.MustCompile(`^\[[^\]]+\]:\s*\S+$`)

type numberedLine struct {
	number int
	text   string
}

// proseLines is a page's lines outside fenced code blocks, numbered from 1.
func proseLines(t *testing.T, page string) []numberedLine {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	return linesOutsideCode(string(data))
}

func linesOutsideCode(text string) []numberedLine {
	var out []numberedLine
	inCode := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			out = append(out, numberedLine{number: i + 1, text: line})
		}
	}
	return out
}

// withoutCodeSpans blanks `code spans`, whose brackets are not links.
func withoutCodeSpans(line string) string {
	return regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "``")
}
