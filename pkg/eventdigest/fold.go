package eventdigest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MaxExamples bounds the objects one aggregate Event names.
const MaxExamples = 3

// maxNote bounds an Event's note: the API server refuses notes over 1 KiB.
const maxNote = 1000

// Key is what one aggregate Event is about: one reason of one rule on one
// kind's objects in one namespace. Message is the rule's own sentence for
// the reason, the same for every object ("rule team: missing required
// metadata"); what differs between objects goes in their Occurrence.
type Key struct {
	Type, Reason, Action string
	Rule, Kind           string
	// Namespace is the objects' namespace (a Namespace object's own name);
	// "" for cluster-scoped objects.
	Namespace string
	Message   string
}

// Occurrence is one object's: its name (its namespace is the key's) and
// what is true of it ("missing labels team").
type Occurrence struct {
	Object, Detail string
}

// fold is what the occurrences of one key since its last write add up to:
// how many, and the examples an Event names: the MaxExamples smallest
// object names, so that what a fold says does not depend on the order the
// occurrences came in.
type fold struct {
	count    int
	examples []Occurrence
	// since is when the first of them came.
	since time.Time
}

// add folds o in.
func (f *fold) add(o Occurrence, now time.Time) {
	if f.count == 0 {
		f.since = now
	}
	f.count++
	f.keep(o)
}

// keep adds o to the examples if it is among the MaxExamples smallest.
func (f *fold) keep(o Occurrence) {
	i, found := slices.BinarySearchFunc(f.examples, o, compareOccurrences)
	if found || i >= MaxExamples {
		return
	}
	f.examples = slices.Insert(f.examples, i, o)
	if len(f.examples) > MaxExamples {
		f.examples = f.examples[:MaxExamples]
	}
}

// merge adds o's occurrences to f (o came later).
func (f *fold) merge(o fold) {
	if o.count == 0 {
		return
	}
	if f.count == 0 || o.since.Before(f.since) {
		f.since = o.since
	}
	f.count += o.count
	for _, e := range o.examples {
		f.keep(e)
	}
}

func compareOccurrences(a, b Occurrence) int {
	return cmp.Or(strings.Compare(a.Object, b.Object), strings.Compare(a.Detail, b.Detail))
}

// note is the Event's note for key's first write of a series, folding f:
// the rule's message, how many objects, and examples, within 1 KiB.
func note(k Key, f fold) string {
	where := "in this namespace"
	if k.Namespace == "" {
		where = "cluster-scoped"
	}
	s := fmt.Sprintf("%s: %d %s objects %s (this Event's series counts every object reported since)", k.Message, f.count, k.Kind, where)
	var ex []string
	for _, e := range f.examples {
		if e.Detail == "" {
			ex = append(ex, e.Object)
			continue
		}
		ex = append(ex, e.Object+" ("+e.Detail+")")
	}
	if len(ex) > 0 {
		s += "; e.g. " + strings.Join(ex, ", ")
	}
	if len(s) > maxNote {
		s = s[:maxNote-3] + "..."
	}
	return s
}

// budget is a token bucket of Event writes: at most perMinute a minute,
// and as many at once.
type budget struct {
	perMinute int
	tokens    float64
	at        time.Time
}

func newBudget(perMinute int, now time.Time) budget {
	return budget{perMinute: perMinute, tokens: float64(perMinute), at: now}
}

// take spends one write if the budget has one at now.
func (b *budget) take(now time.Time) bool {
	if b.perMinute <= 0 {
		return false
	}
	if now.After(b.at) {
		b.tokens = min(float64(b.perMinute), b.tokens+now.Sub(b.at).Minutes()*float64(b.perMinute))
		b.at = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
