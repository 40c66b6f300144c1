package reload_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// resultsScale is the violating pods and their namespaces of
// TestResultsStayBoundedAtAnyScale: 300 pods in 3 namespaces in make test;
// METAWATCH_RESULTS_PODS and METAWATCH_RESULTS_NAMESPACES for the figures
// (3,000 and 100,000 pods: bench/results/2026-11-27-reports).
func resultsScale() (pods, namespaces int) {
	pods, namespaces = 300, 3
	if n, err := strconv.Atoi(os.Getenv("METAWATCH_RESULTS_PODS")); err == nil && n > 0 {
		pods = n
	}
	if n, err := strconv.Atoi(os.Getenv("METAWATCH_RESULTS_NAMESPACES")); err == nil && n > 0 {
		namespaces = n
	}
	return pods, namespaces
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

// A new require rule that every pod fails, with the production intervals:
// the violations are told by one Event per namespace, whose series counts
// every pod, and kept in one Report per namespace, whose summary counts
// them; the Event writes stay within one per namespace per interval (and
// the bound per minute), the report writes within one per namespace per
// minute, whatever the pods. METAWATCH_RESULTS_PODS sizes it.
func TestResultsStayBoundedAtAnyScale(t *testing.T) {
	controlplane.SkipIfShort(t)
	pods, namespaces := resultsScale()
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

	// The production intervals: Events every 30 s, reports at most once a minute.
	defer func(events time.Duration) { eventdigest.DefaultInterval = events }(eventdigest.DefaultInterval)
	eventdigest.DefaultInterval = 30 * time.Second
	counter := &writeCounter{}
	rule := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: require-team, kinds: [Pod], requireLabels: [team]}\n", strings.Join(names, ", "))
	kubectlApply(t, selectors(names[0], rule))
	start := time.Now()
	startInstance(t, cp.Config, names[0]+"/selectors", func(r *reload.Reloader) {
		r.Config = counter.wrap(r.Config)
		r.OpenReports = true
	})

	rc := reportsReader(t)
	told, reported := 0, 0
	testkit.WaitFor(t, fmt.Sprintf("%d violations told by Events and kept in reports", pods), 30*time.Minute, func() bool {
		told, reported = 0, 0
		for _, ns := range names {
			told += testkit.Occurrences(testkit.AggregateEvents(t, c, ns, "MissingRequiredMetadata", "require-team"))
			var r openreports.Report
			if err := rc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: reports.Identity{FieldManager: "metawatch"}.Name()}, &r); err == nil {
				reported += r.Summary.Fail
			}
		}
		return told == pods && reported == pods
	})
	elapsed := time.Since(start)
	events, written := int(counter.events.Load()), int(counter.reports.Load())
	t.Logf("%d violating pods in %d namespaces: told in %s by %d Event writes, kept by %d report writes (each report lists at most %d results)",
		pods, namespaces, elapsed.Round(time.Second), events, written, reports.DefaultMaxResults)

	intervals := int(elapsed/(30*time.Second)) + 1
	minutes := int(elapsed/time.Minute) + 1
	if bound := min(namespaces*intervals, eventdigest.DefaultWritesPerMinute*minutes); events > bound {
		t.Errorf("%d Event writes in %s, want at most %d (one per namespace per 30 s, at most %d a minute)", events, elapsed, bound, eventdigest.DefaultWritesPerMinute)
	}
	if bound := namespaces * (minutes + 1); written > bound {
		t.Errorf("%d report writes in %s, want at most %d (one per namespace per minute)", written, elapsed, bound)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reportsReader is a client that reads the OpenReports kinds.
func reportsReader(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := openreports.Install(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
