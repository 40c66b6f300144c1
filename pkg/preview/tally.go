package preview

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Tally groups reports by rule and namespace: how many objects are not as
// each rule wants, and why. It keeps a few example objects per group, so
// that its memory does not grow with the objects.
type Tally struct {
	groups map[groupKey]*Group
	// Objects counts every object reported on; Off those not as the rules
	// want, of which Change metawatch would write and Offend fail a
	// requirement or hold a conflicting key.
	Objects, Off, Change, Offend int
	// kinds counts the objects of each kind, losing those that would lose
	// keys (removed or released): what the removal brake bounds (brake.go).
	kinds, losing map[string]int
}

type groupKey struct{ rule, namespace string }

// Group is one rule's objects in one namespace that are not as it wants.
type Group struct {
	Rule      string `json:"rule"`
	Namespace string `json:"namespace,omitempty"`
	// Missing: a key the rule sets is absent; Wrong: it has another value;
	// Remove: a key the rule removes is there; Conflicting: another field
	// manager holds a key the rule wants; Violating: a requirement fails;
	// Release: metawatch set a key no rule wants any more (rule "").
	Missing     int `json:"missing,omitempty"`
	Wrong       int `json:"wrong,omitempty"`
	Remove      int `json:"remove,omitempty"`
	Release     int `json:"release,omitempty"`
	Conflicting int `json:"conflicting,omitempty"`
	// Left: keys metawatch would write that a guardrail keeps as they are.
	Left      int      `json:"left,omitempty"`
	Violating int      `json:"violating,omitempty"`
	Examples  []string `json:"examples"`
}

// examplesPerGroup is how many objects a group names.
const examplesPerGroup = 3

// Add counts r.
func (t *Tally) Add(r Report) {
	t.Objects++
	t.countLosing(r)
	if r.Skipped != "" || (!r.Changes() && !r.Offends()) {
		return
	}
	t.Off++
	if r.Changes() {
		t.Change++
	}
	if r.Offends() {
		t.Offend++
	}
	seen := map[*Group]bool{}
	for _, w := range r.Writes {
		g := t.group(w.Rule, r.Object, seen)
		switch {
		case w.Action == "release":
			g.Release++
		case w.Action == "remove":
			g.Remove++
		case w.Had && w.Action == "set":
			g.Wrong++
		case w.Action == "set":
			g.Missing++
		}
	}
	for _, c := range r.Conflicts {
		t.group(c.Rule, r.Object, seen).Conflicting++
	}
	for _, v := range r.Violations {
		t.group(v.Rule, r.Object, seen).Violating++
	}
	for _, l := range r.Left {
		t.group(l.Rule, r.Object, seen).Left++
	}
}

// group is the group of rule in obj's namespace, naming obj once.
func (t *Tally) group(rule string, obj Ref, seen map[*Group]bool) *Group {
	if t.groups == nil {
		t.groups = map[groupKey]*Group{}
	}
	k := groupKey{rule, obj.Namespace}
	g, ok := t.groups[k]
	if !ok {
		g = &Group{Rule: rule, Namespace: obj.Namespace, Examples: []string{}}
		t.groups[k] = g
	}
	if !seen[g] && len(g.Examples) < examplesPerGroup {
		g.Examples = append(g.Examples, obj.String())
	}
	seen[g] = true
	return g
}

// Groups are the groups, by rule then namespace.
func (t *Tally) Groups() []Group {
	out := make([]Group, 0, len(t.groups))
	for _, g := range t.groups {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rule != out[j].Rule {
			return out[i].Rule < out[j].Rule
		}
		return out[i].Namespace < out[j].Namespace
	})
	return out
}

// WriteText writes the tally as a table.
func (t *Tally) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tNAMESPACE\tMISSING\tWRONG\tREMOVE\tRELEASE\tCONFLICTING\tVIOLATING\tLEFT\tFOR EXAMPLE")
	for _, g := range t.Groups() {
		rule := g.Rule
		if rule == "" {
			rule = "(none: released or kept)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", rule, orDash(g.Namespace), g.Missing, g.Wrong, g.Remove, g.Release, g.Conflicting, g.Violating, g.Left,
			strings.Join(g.Examples, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d objects: %d not as the rules want\n", t.Objects, t.Off)
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
