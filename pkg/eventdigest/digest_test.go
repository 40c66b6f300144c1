package eventdigest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/eventdigest"
)

// memorySink keeps the Events written, and their series as patched.
type memorySink struct {
	mu      sync.Mutex
	events  map[string]*eventsv1.Event
	creates int
	patches int
}

func newMemorySink() *memorySink { return &memorySink{events: map[string]*eventsv1.Event{}} }

func (s *memorySink) Create(_ context.Context, e *eventsv1.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creates++
	s.events[e.Namespace+"/"+e.Name] = e.DeepCopy()
	return nil
}

func (s *memorySink) Patch(_ context.Context, ns, name string, patch []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patches++
	e, ok := s.events[ns+"/"+name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, name)
	}
	var p struct{ Series *eventsv1.EventSeries }
	if err := json.Unmarshal(patch, &p); err != nil {
		return err
	}
	e.Series = p.Series
	return nil
}

// counted is how many occurrences the Events carry: a series' count, or 1.
func (s *memorySink) counted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if e.Series != nil {
			n += int(e.Series.Count)
		} else {
			n++
		}
	}
	return n
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestFlush(t *testing.T) {
	key := func(ns, rule string) eventdigest.Key {
		return eventdigest.Key{Type: "Warning", Reason: "MissingRequiredMetadata", Action: "Audit", Rule: rule, Kind: "Pod", Namespace: ns, Message: "rule " + rule}
	}
	for name, tc := range map[string]struct {
		namespaces, rules, objects int
		perMinute, rounds          int
		wantCreates, wantEvents    int
	}{
		"3,000 objects of one rule in one namespace are one Event":               {namespaces: 1, rules: 1, objects: 3000, perMinute: 120, rounds: 1, wantCreates: 1, wantEvents: 1},
		"objects keep coming: one create, then a patch of its series each round": {namespaces: 1, rules: 1, objects: 100, perMinute: 120, rounds: 3, wantCreates: 1, wantEvents: 1},
		"one Event per rule and namespace":                                       {namespaces: 5, rules: 2, objects: 10, perMinute: 120, rounds: 1, wantCreates: 10, wantEvents: 10},
		"beyond the writes a minute allows, the rest wait for the next round":    {namespaces: 10, rules: 1, objects: 2, perMinute: 4, rounds: 1, wantCreates: 4, wantEvents: 4},
	} {
		t.Run(name, func(t *testing.T) {
			sink := newMemorySink()
			c := &clock{t: time.Unix(1_000_000, 0)}
			d := &eventdigest.Digest{Sink: sink, Instance: "metawatch-test", WritesPerMinute: tc.perMinute, Log: logr.Discard()}
			d.SetClock(c.now)
			added := 0
			for round := range tc.rounds {
				for ns := range tc.namespaces {
					for r := range tc.rules {
						for o := range tc.objects {
							d.Add(key(fmt.Sprintf("ns-%d", ns), fmt.Sprintf("rule-%d", r)), eventdigest.Occurrence{Object: fmt.Sprintf("pod-%d-%d", round, o)})
							added++
						}
					}
				}
				d.Flush(t.Context())
				c.t = c.t.Add(30 * time.Second)
			}
			if sink.creates != tc.wantCreates || len(sink.events) != tc.wantEvents {
				t.Errorf("%d creates, %d Events; want %d, %d", sink.creates, len(sink.events), tc.wantCreates, tc.wantEvents)
			}
			if writes, bound := sink.creates+sink.patches, tc.perMinute*(tc.rounds+1)/2+tc.perMinute; writes > bound {
				t.Errorf("%d writes in %d rounds of 30s, want at most %d", writes, tc.rounds, bound)
			}
			if got := sink.counted() + d.Pending(); got != added {
				t.Errorf("the Events count %d occurrences and %d wait, want %d in all", sink.counted(), d.Pending(), added)
			}
			for _, e := range sink.events {
				if e.Regarding.Kind != "Namespace" || e.Regarding.Name != e.Namespace {
					t.Errorf("Event %s/%s regards %s %s, want its Namespace", e.Namespace, e.Name, e.Regarding.Kind, e.Regarding.Name)
				}
			}
		})
	}
}

// After SeriesWindow without occurrences, the key's next ones start a new
// Event, whose note names new examples.
func TestFlushStartsANewSeriesAfterTheWindow(t *testing.T) {
	sink := newMemorySink()
	c := &clock{t: time.Unix(1_000_000, 0)}
	d := &eventdigest.Digest{Sink: sink, Instance: "i", Log: logr.Discard()}
	d.SetClock(c.now)
	k := eventdigest.Key{Type: "Warning", Reason: "LabelConflict", Action: "Apply", Rule: "r", Kind: "Pod", Namespace: "a", Message: "rule r"}
	d.Add(k, eventdigest.Occurrence{Object: "p1"})
	d.Flush(t.Context())
	c.t = c.t.Add(eventdigest.SeriesWindow + time.Second)
	d.Add(k, eventdigest.Occurrence{Object: "p2"})
	d.Flush(t.Context())
	if sink.creates != 2 || sink.patches != 0 {
		t.Errorf("%d creates and %d patches, want 2 creates", sink.creates, sink.patches)
	}
}
