package preview

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rules"
)

// Summary counts the reports.
type Summary struct {
	Objects int `json:"objects"`
	// Change: metawatch would write them; Offend: they fail a requirement
	// or hold a key another manager owns; Skipped: no rule looks at them.
	Change  int `json:"change"`
	Offend  int `json:"offend"`
	Skipped int `json:"skipped"`
}

// Summarize counts reports.
func Summarize(reports []Report) Summary {
	var s Summary
	for _, r := range reports {
		s.add(r)
	}
	return s
}

func (s *Summary) add(r Report) {
	s.Objects++
	switch {
	case r.Skipped != "":
		s.Skipped++
	default:
		if r.Changes() {
			s.Change++
		}
		if r.Offends() {
			s.Offend++
		}
	}
}

// WriteJSON writes the reports and their summary as one JSON document.
func WriteJSON(w io.Writer, reports []Report) error { return writeAll(NewWriter(w, "json"), reports) }

// WriteText writes the reports for a person: one block per object.
func WriteText(w io.Writer, reports []Report) error { return writeAll(NewWriter(w, "text"), reports) }

func writeAll(w *Writer, reports []Report) error {
	for _, r := range reports {
		if err := w.Write(r); err != nil {
			return err
		}
	}
	_, err := w.Close()
	return err
}

// Writer writes reports as they come, in the format of WriteText or
// WriteJSON, and their summary last: its memory is a report, not all.
type Writer struct {
	w       *bufio.Writer
	json    bool
	summary Summary
}

// NewWriter writes reports to w as text or (format "json") JSON.
func NewWriter(w io.Writer, format string) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10), json: format == "json"}
}

// Write writes r.
func (w *Writer) Write(r Report) error {
	first := w.summary.Objects == 0
	w.summary.add(r)
	if !w.json {
		var b strings.Builder
		writeReport(&b, r)
		_, err := w.w.WriteString(b.String())
		return err
	}
	// As json.Encoder with SetIndent("", "  ") writes {"reports": [...]}.
	raw, err := json.MarshalIndent(r, "    ", "  ")
	if err != nil {
		return err
	}
	if first {
		_, _ = w.w.WriteString("{\n  \"reports\": [\n    ")
	} else {
		_, _ = w.w.WriteString(",\n    ")
	}
	_, err = w.w.Write(raw)
	return err
}

// Close writes the summary of the reports written, and returns it.
func (w *Writer) Close() (Summary, error) {
	s := w.summary
	if !w.json {
		fmt.Fprintf(w.w, "%d objects: %d would change, %d violate a requirement or conflict, %d not looked at\n", s.Objects, s.Change, s.Offend, s.Skipped)
		return s, w.w.Flush()
	}
	raw, err := json.MarshalIndent(s, "  ", "  ")
	if err != nil {
		return s, err
	}
	if s.Objects == 0 {
		_, _ = w.w.WriteString("{\n  \"reports\": []")
	} else {
		_, _ = w.w.WriteString("\n  ]")
	}
	fmt.Fprintf(w.w, ",\n  \"summary\": %s\n}\n", raw)
	return s, w.w.Flush()
}

func writeReport(b *strings.Builder, r Report) {
	if r.Skipped != "" {
		fmt.Fprintf(b, "%s: not looked at: %s\n", r.Object, r.Skipped)
		return
	}
	fmt.Fprintf(b, "%s:\n", r.Object)
	if len(r.Rules) == 0 {
		fmt.Fprintf(b, "  no rule has kind %s\n", r.Object.Kind)
	}
	for _, v := range r.Rules {
		verdict := "applies"
		if !v.Applies {
			verdict = "does not apply"
		}
		fmt.Fprintf(b, "  rule %s %s: %s\n", v.Rule, verdict, v.Why)
	}
	for _, w := range r.Writes {
		fmt.Fprintf(b, "  %s\n", w)
	}
	for _, c := range r.Conflicts {
		fmt.Fprintf(b, "  conflict: rule %s wants %s %s=%q, but field manager %q owns it with %q: left as it is (force: true on the rule takes it)\n",
			c.Rule, singular(c.Map), c.Key, c.Want, c.Manager, c.Have)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(b, "  violation: rule %s: %s\n", v.Rule, missing(v.MissingLabels, v.MissingAnnotations))
	}
	for _, l := range r.Left {
		fmt.Fprintf(b, "  left: %s\n", describeLeft(r.Object.Kind, l))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
	if !r.Changes() && !r.Offends() {
		fmt.Fprintln(b, "  nothing to change")
	}
}

func (w Write) String() string {
	was := "absent"
	if w.Had {
		was = fmt.Sprintf("%q", w.Was)
	}
	from := ""
	if w.From != "" {
		from = ", from " + w.From
	}
	switch w.Action {
	case "adopt":
		return fmt.Sprintf("would adopt %s %s=%q (rule %s%s): the value is right; metawatch takes ownership, as of a key set at admission", singular(w.Map), w.Key, w.Value, w.Rule, from)
	case "remove":
		return fmt.Sprintf("would remove %s %s (was %s; rule %s)", singular(w.Map), w.Key, was, w.Rule)
	case "release":
		return fmt.Sprintf("would release %s %s (was %s): metawatch set it and no rule wants it now", singular(w.Map), w.Key, was)
	}
	return fmt.Sprintf("would set %s %s=%q (was %s; rule %s%s)", singular(w.Map), w.Key, w.Value, was, w.Rule, from)
}

// describeLeft says which write a guardrail stops, and which flag it is.
func describeLeft(kind string, l rules.Left) string {
	what := fmt.Sprintf("would %s %s %s", l.Action, l.Map, l.Key)
	if l.Rule != "" {
		what += " (rule " + l.Rule + ")"
	}
	why := map[string]string{
		config.RefusedKind:      "--writable-kinds does not allow " + kind,
		config.RefusedNamespace: "the namespace is outside the write scope",
		config.RefusedProtected: "--protected-keys protects it",
		config.RefusedReserved:  "it is under a prefix Kubernetes reserves, and --allowed-reserved-keys (with the rule's reservedKeys) does not allow it",
	}[l.Reason]
	return what + ", but " + why + ": left as it is"
}

func singular(what string) string { return strings.TrimSuffix(what, "s") }

func missing(labels, annotations []string) string {
	var parts []string
	if len(labels) > 0 {
		parts = append(parts, "missing label "+strings.Join(labels, ", "))
	}
	if len(annotations) > 0 {
		parts = append(parts, "missing annotation "+strings.Join(annotations, ", "))
	}
	return strings.Join(parts, "; ")
}
