package check

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/pkg/eventdigest"
)

// fightWindow is how far back the report looks for OwnershipFight Events:
// a fight's rounds last minutes to an hour, and its Event is recorded at
// the start of each.
const fightWindow = time.Hour

// fightExamples bounds the objects the report names per kind.
const fightExamples = 5

// Fights are the ownership fights the running metawatch reported, per
// kind: keys it sets that something else keeps removing, keys it removes
// that something keeps putting back, keys two forcing controllers take from
// each other. The check cannot see them from the objects alone: they are
// read from the aggregate OwnershipFight Events of the last fightWindow
// (one per rule, kind and namespace, whose series counts the rounds).
type Fights struct {
	// Objects are, per kind, how many rounds of fights on its objects the
	// Events count (an object fighting for an hour has a few).
	Objects map[string]int `json:"objects"`
	// Examples are some of the Events, with what they said.
	Examples []string `json:"examples,omitempty"`
	// Unreadable says why the Events could not be listed ("" if they were).
	Unreadable string `json:"unreadable,omitempty"`
}

// listFights reads the OwnershipFight Events of the last fightWindow.
func listFights(ctx context.Context, cs kubernetes.Interface, reason string, now time.Time) Fights {
	f := Fights{Objects: map[string]int{}}
	seen := map[string]bool{}
	opts := metav1.ListOptions{FieldSelector: "reason=" + reason, Limit: reportPageSize}
	for {
		page, err := cs.EventsV1().Events(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			f.Unreadable = err.Error()
			return f
		}
		for i := range page.Items {
			f.add(&page.Items[i], now, seen)
		}
		if opts.Continue = page.Continue; opts.Continue == "" {
			break
		}
	}
	sort.Strings(f.Examples)
	return f
}

func (f *Fights) add(e *eventsv1.Event, now time.Time, seen map[string]bool) {
	at := e.EventTime.Time
	if e.Series != nil {
		at = e.Series.LastObservedTime.Time
	}
	if now.Sub(at) > fightWindow {
		return
	}
	kind := e.Annotations[eventdigest.AnnotationKind]
	if kind == "" { // an Event of an older metawatch, about one object
		kind = e.Regarding.Kind
	}
	id := e.Namespace + "/" + e.Name
	if seen[id] {
		return
	}
	seen[id] = true
	n := 1
	if e.Series != nil {
		n = max(1, int(e.Series.Count))
	}
	f.Objects[kind] += n
	if len(f.Examples) < fightExamples {
		f.Examples = append(f.Examples, fmt.Sprintf("%s %s: %s", e.Regarding.Kind, e.Regarding.Name, e.Note))
	}
}

// write says the fights, if any.
func (f Fights) write(w io.Writer) error {
	if f.Unreadable != "" {
		_, err := fmt.Fprintf(w, "ownership fights: the OwnershipFight Events could not be listed (%s)\n", f.Unreadable)
		return err
	}
	kinds := make([]string, 0, len(f.Objects))
	for kind := range f.Objects {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		if _, err := fmt.Fprintf(w, "ownership fights: %d on %s objects in the last %s, where metawatch leaves a key to something that keeps undoing its write\n", f.Objects[kind], kind, fightWindow); err != nil {
			return err
		}
	}
	for _, e := range f.Examples {
		if _, err := fmt.Fprintf(w, "  %s\n", e); err != nil {
			return err
		}
	}
	return nil
}
