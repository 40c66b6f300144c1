package reload_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// resultsScale is the violating pods and their namespaces of
// TestResultsStayBoundedAtAnyScale, and whether it runs at the production
// intervals: 300 pods in 3 namespaces at the short intervals of TestMain
// in make test; METAWATCH_RESULTS_PODS (and METAWATCH_RESULTS_NAMESPACES)
// for the figures, at the production intervals (docs/results.md).
func resultsScale(t *testing.T) (pods, namespaces int, production bool) {
	t.Helper()
	pods, namespaces = 300, 3
	for name, n := range map[string]*int{"METAWATCH_RESULTS_PODS": &pods, "METAWATCH_RESULTS_NAMESPACES": &namespaces} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 1 {
			t.Fatalf("%s=%q: want a positive number", name, v)
		}
		*n, production = i, true
	}
	return pods, namespaces, production
}

// writeCounter counts the writes of Events and of OpenReports reports that
// leave through a rest.Config.
type writeCounter struct {
	events, reports atomic.Int64
}

func (w *writeCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				switch {
				case strings.Contains(req.URL.Path, "/apis/events.k8s.io/") || strings.HasSuffix(req.URL.Path, "/events") || strings.Contains(req.URL.Path, "/events/"):
					w.events.Add(1)
				case strings.Contains(req.URL.Path, "/apis/openreports.io/"):
					w.reports.Add(1)
				}
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A new require rule that every pod fails: the violations are told by one
// Event per namespace, whose series counts every pod, and kept in one
// Report per namespace, whose summary counts them. The Event writes stay
// within one per namespace per interval (and the bound per minute), the
// report writes within one per namespace per report interval, whatever the
// pods. METAWATCH_RESULTS_PODS sizes it, and runs it at the production
// intervals (Events every 30 s, reports at most once a minute).
func TestResultsStayBoundedAtAnyScale(t *testing.T) {
	controlplane.SkipIfShort(t)
	pods, namespaces, production := resultsScale(t)
	c := testkit.Client(t, cp.Config)
	testkit.InstallOpenReports(t, cp.Config, "../..")
	var names []string
	created := time.Now()
	for i := range namespaces {
		ns := fmt.Sprintf("results-%d", i)
		names = append(names, ns)
		testkit.Namespace(t, c, ns, nil)
		testkit.Pods(t, c, ns, pods/namespaces+boolInt(i < pods%namespaces))
	}
	t.Logf("%d pods in %d namespaces created in %s", pods, namespaces, time.Since(created).Round(time.Second))

	if production {
		defer func(events, interval, poll time.Duration) {
			eventdigest.DefaultInterval, reports.DefaultInterval, reports.DefaultPoll = events, interval, poll
		}(eventdigest.DefaultInterval, reports.DefaultInterval, reports.DefaultPoll)
		eventdigest.DefaultInterval, reports.DefaultInterval, reports.DefaultPoll = 30*time.Second, time.Minute, 5*time.Second
	}
	eventInterval, reportInterval := eventdigest.DefaultInterval, reports.DefaultInterval
	foldedBefore := testkit.Metric(t, "metawatch_events_folded_total", map[string]string{"reason": "MissingRequiredMetadata"})
	counter := &writeCounter{}
	rule := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: require-team, kinds: [Pod], requireLabels: [team]}\n", strings.Join(names, ", "))
	kubectlApply(t, selectors(names[0], rule))
	start := time.Now()
	startInstance(t, cp.Config, names[0]+"/selectors", func(r *reload.Reloader) {
		r.Config = counter.wrap(r.Config)
		r.Settings.OpenReports = true
	})

	rc := testkit.OpenReportsClient(t, cp.Config)
	name := reports.Names{Identity: authority.NewIdentity("metawatch", "")}.Name()
	deadline := testkit.Timeout + 2*reportInterval
	if production {
		deadline = 30 * time.Minute
	}
	var kept []openreports.Report
	testkit.WaitFor(t, fmt.Sprintf("%d violations told by Events and kept in reports", pods), deadline, func() bool {
		told, reported := 0, 0
		kept = kept[:0]
		for _, ns := range names {
			told += testkit.Occurrences(testkit.AggregateEvents(t, c, ns, "MissingRequiredMetadata", "require-team"))
			var r openreports.Report
			if err := rc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &r); err == nil {
				reported += r.Summary.Fail
				kept = append(kept, r)
			}
		}
		return told == pods && reported == pods
	})
	elapsed := time.Since(start)
	events, written := int(counter.events.Load()), int(counter.reports.Load())
	largest := 0
	for _, r := range kept {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(raw))
		if len(r.Results) != min(r.Summary.Fail, reports.DefaultMaxResults) {
			t.Errorf("Report %s lists %d results of %d fails, want %d (the bound)", r.Namespace, len(r.Results), r.Summary.Fail, min(r.Summary.Fail, reports.DefaultMaxResults))
		}
	}
	t.Logf("%d violating pods in %d namespaces: told in %s by %d Event writes, kept by %d report writes (each report lists at most %d results; the largest is %d bytes)",
		pods, namespaces, elapsed.Round(time.Second), events, written, reports.DefaultMaxResults, largest)

	for _, ns := range names {
		if n := len(testkit.AggregateEvents(t, c, ns, "MissingRequiredMetadata", "require-team")); n != 1 {
			t.Errorf("%d MissingRequiredMetadata Events in %s, want 1 whose series counts its pods", n, ns)
		}
	}
	if n := testkit.Metric(t, "metawatch_events_folded_total", map[string]string{"reason": "MissingRequiredMetadata"}) - foldedBefore; int(n) != pods {
		t.Errorf("metawatch_events_folded_total{reason=MissingRequiredMetadata} grew by %v, want %d (one occurrence per pod)", n, pods)
	}
	intervals := int(elapsed/eventInterval) + 1
	minutes := int(elapsed/time.Minute) + 1
	if bound := min(namespaces*intervals, eventdigest.DefaultWritesPerMinute*minutes); events > bound {
		t.Errorf("%d Event writes in %s, want at most %d (one per namespace per %s, at most %d a minute)", events, elapsed, bound, eventInterval, eventdigest.DefaultWritesPerMinute)
	}
	if bound := namespaces * (int(elapsed/reportInterval) + 2); written > bound {
		t.Errorf("%d report writes in %s, want at most %d (one per namespace per %s)", written, elapsed, bound, reportInterval)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
