package eventdigest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Defaults of a Digest.
var (
	// DefaultInterval is how often a Digest writes what it folded: an
	// object's occurrence is told within about this long. Tests shorten it.
	DefaultInterval = 30 * time.Second
	// DefaultWritesPerMinute bounds the Event writes of a process.
	DefaultWritesPerMinute = 120
	// DefaultMaxKeys bounds the keys waiting to be written; an occurrence of
	// a new key beyond it is dropped (counted).
	DefaultMaxKeys = 10000
	// DefaultMaxDelay is how long a fold may wait for the write budget
	// before it is dropped (counted).
	DefaultMaxDelay = 10 * time.Minute
)

// SeriesWindow is how long a series stays open without an occurrence, as
// client-go's events.k8s.io recorder keeps them: a key's next fold within
// it adds to the Event's series; after it, a new Event is created, with
// new examples.
const SeriesWindow = 6 * time.Minute

// Sink writes Events: an events.k8s.io/v1 client (NewSink), or a test's.
type Sink interface {
	Create(ctx context.Context, e *eventsv1.Event) error
	// Patch sends a JSON merge patch of the Event namespace/name.
	Patch(ctx context.Context, namespace, name string, patch []byte) error
}

// Digest folds per-object occurrences (an object starting to violate a
// rule, a conflict, a fight, a key a guardrail leaves) into one Event per
// Key and writes them at most once per Interval each, within a bound of
// writes per minute for the whole process: thousands of objects that
// start violating a new rule are one Event per namespace, not one each.
//
// The Event of a namespaced object's key regards its Namespace; that of a
// cluster-scoped one regards ClusterRegarding (the selectors ConfigMap).
// The first write of a key creates an Event whose note names the rule, the
// count and up to MaxExamples objects, and whose series counts the objects
// (events.k8s.io/v1 series: the note cannot change, the count can); later
// writes within SeriesWindow add to the series' count.
//
// It is safe for concurrent use; Add never blocks on the API server.
type Digest struct {
	Sink Sink
	// Instance is the reportingInstance of the Events (this replica):
	// replicas' Events never merge.
	Instance string
	// ClusterRegarding is what Events about cluster-scoped objects regard;
	// nil, or nil returned: the Namespace default.
	ClusterRegarding func() *corev1.ObjectReference
	// Interval, WritesPerMinute, MaxKeys, MaxDelay: zero means the default.
	Interval        time.Duration
	WritesPerMinute int
	MaxKeys         int
	MaxDelay        time.Duration
	Log             logr.Logger

	now func() time.Time

	mu      sync.Mutex
	pending map[Key]*fold
	series  map[Key]*series
	budget  *budget
}

// series is an Event written for a key: more occurrences within
// SeriesWindow add to its count.
type series struct {
	namespace, name string
	count           int
	last            time.Time
}

// Annotations of an aggregate Event: the rule and the kind of the objects
// it counts, for readers (metawatch check) that should not parse its note.
const (
	AnnotationRule = "metawatch.dev/rule"
	AnnotationKind = "metawatch.dev/kind"
)

// EventSource is the reportingController of the Events.
const EventSource = "metawatch"

// New returns a Digest writing through sink as instance.
func New(sink Sink, instance string, log logr.Logger) *Digest {
	return &Digest{Sink: sink, Instance: instance, Log: log}
}

// DefaultInstance is this process's reportingInstance, as client-go names
// it: the source and the host name (the pod's).
func DefaultInstance() string {
	host, _ := os.Hostname()
	return truncate(EventSource+"-"+host, 128)
}

// NewSink is the events.k8s.io/v1 client of cfg.
func NewSink(cfg *rest.Config) (Sink, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return clientSink{cs}, nil
}

type clientSink struct{ cs kubernetes.Interface }

func (s clientSink) Create(ctx context.Context, e *eventsv1.Event) error {
	_, err := s.cs.EventsV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
	return err
}

func (s clientSink) Patch(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := s.cs.EventsV1().Events(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (d *Digest) init() {
	if d.pending != nil {
		return
	}
	if d.now == nil {
		d.now = time.Now
	}
	d.pending, d.series = map[Key]*fold{}, map[Key]*series{}
	b := newBudget(cmp.Or(d.WritesPerMinute, DefaultWritesPerMinute), d.now())
	d.budget = &b
}

// Add folds one object's occurrence under k. A nil Digest drops it.
func (d *Digest) Add(k Key, o Occurrence) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	f, ok := d.pending[k]
	if !ok {
		if len(d.pending) >= cmp.Or(d.MaxKeys, DefaultMaxKeys) {
			telemetry.EventsDropped.WithLabelValues(k.Reason).Inc()
			return
		}
		f = &fold{}
		d.pending[k] = f
	}
	f.add(o, d.now())
	telemetry.EventsFolded.WithLabelValues(k.Reason).Inc()
}

// Start writes what was folded every Interval until ctx ends, then once
// more (what was folded last is not lost on a clean stop).
func (d *Digest) Start(ctx context.Context) error {
	t := time.NewTicker(cmp.Or(d.Interval, DefaultInterval))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			d.Flush(flushCtx)
			cancel()
			return nil
		case <-t.C:
			d.Flush(ctx)
		}
	}
}

// NeedLeaderElection is false: a replica that does not lead folds nothing.
func (d *Digest) NeedLeaderElection() bool { return false }

// pendingFold is one key's fold, taken to be written.
type pendingFold struct {
	key  Key
	fold fold
}

// Flush writes each key's fold, oldest first, as long as the write budget
// allows; what it does not write waits for the next (or, waiting longer
// than MaxDelay, is dropped and counted).
func (d *Digest) Flush(ctx context.Context) {
	d.mu.Lock()
	d.init()
	taken := make([]pendingFold, 0, len(d.pending))
	for k, f := range d.pending {
		taken = append(taken, pendingFold{key: k, fold: *f})
	}
	d.pending = map[Key]*fold{}
	d.mu.Unlock()
	slices.SortFunc(taken, func(a, b pendingFold) int {
		return cmp.Or(a.fold.since.Compare(b.fold.since), compareKeys(a.key, b.key))
	})
	for _, p := range taken {
		now := d.now()
		d.mu.Lock()
		ok := d.budget.take(now)
		d.mu.Unlock()
		if !ok {
			d.requeue(p, now)
			continue
		}
		switch err := d.write(ctx, p.key, p.fold, now); {
		case err == nil:
		case refused(err): // the namespace is terminating, or the Event invalid: never written
			d.Log.Info("warning: an aggregate Event was refused; its occurrences are dropped", "reason", p.key.Reason, "rule", p.key.Rule, "namespace", p.key.Namespace, "error", err.Error())
			telemetry.EventsDropped.WithLabelValues(p.key.Reason).Add(float64(p.fold.count))
		default:
			d.Log.Error(err, "writing an aggregate Event; tried again", "reason", p.key.Reason, "rule", p.key.Rule, "namespace", p.key.Namespace)
			d.requeue(p, now)
		}
	}
	d.forgetEnded(d.now())
}

// forgetEnded forgets the series that ended (quiet for SeriesWindow): the
// next occurrence of their key starts a new Event, so what is remembered
// is bounded by the keys of the last minutes.
func (d *Digest) forgetEnded(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, s := range d.series {
		if now.Sub(s.last) > SeriesWindow {
			delete(d.series, k)
		}
	}
}

// requeue puts a fold not written back, unless it waited too long.
func (d *Digest) requeue(p pendingFold, now time.Time) {
	if now.Sub(p.fold.since) > cmp.Or(d.MaxDelay, DefaultMaxDelay) {
		telemetry.EventsDropped.WithLabelValues(p.key.Reason).Add(float64(p.fold.count))
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.pending[p.key]
	if !ok {
		f = &fold{}
		d.pending[p.key] = f
	}
	f.merge(p.fold)
}

// write writes key's fold f: a new Event, or an addition to its series.
func (d *Digest) write(ctx context.Context, k Key, f fold, now time.Time) error {
	d.mu.Lock()
	s := d.series[k]
	d.mu.Unlock()
	if s != nil && now.Sub(s.last) <= SeriesWindow {
		count := s.count + f.count
		patch, err := json.Marshal(map[string]any{"series": eventsv1.EventSeries{Count: int32(min(count, 1<<31-1)), LastObservedTime: metav1.NewMicroTime(now)}})
		if err != nil {
			return err
		}
		err = d.Sink.Patch(ctx, s.namespace, s.name, patch)
		telemetry.EventWrites.WithLabelValues("patch", result(err)).Inc()
		switch {
		case err == nil:
			d.mu.Lock()
			s.count, s.last = count, now
			d.mu.Unlock()
			return nil
		case !apierrors.IsNotFound(err): // gone (the Event's TTL): a new one
			return err
		}
	}
	e := d.event(k, f, now)
	err := d.Sink.Create(ctx, e)
	telemetry.EventWrites.WithLabelValues("create", result(err)).Inc()
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.series[k] = &series{namespace: e.Namespace, name: e.Name, count: f.count, last: now}
	d.mu.Unlock()
	return nil
}

// refused reports whether the API server will never take the write.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "written"
}

// event is the Event that starts key's series with f.
func (d *Digest) event(k Key, f fold, now time.Time) *eventsv1.Event {
	regarding := d.regarding(k)
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d", d.Instance, k.Reason, k.Rule, k.Kind, k.Namespace, k.Message, now.UnixNano())
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%016x", truncate(regarding.Name, 200), h.Sum64()), Namespace: regarding.Namespace,
			Annotations: map[string]string{AnnotationRule: k.Rule, AnnotationKind: k.Kind}},
		EventTime: metav1.NewMicroTime(now), ReportingController: EventSource, ReportingInstance: d.Instance,
		Action: k.Action, Reason: k.Reason, Regarding: regarding, Note: note(k, f), Type: k.Type,
	}
	if e.Namespace == "" {
		e.Namespace = metav1.NamespaceDefault
	}
	if f.count >= 2 {
		e.Series = &eventsv1.EventSeries{Count: int32(min(f.count, 1<<31-1)), LastObservedTime: metav1.NewMicroTime(now)}
	}
	return e
}

// regarding is what key's Event is about: the objects' Namespace, or for
// cluster-scoped ones ClusterRegarding.
func (d *Digest) regarding(k Key) corev1.ObjectReference {
	if k.Namespace != "" {
		// In the namespace itself (the API server wants the Event's namespace
		// to be its regarding's), where kubectl events -n shows it.
		return corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Namespace: k.Namespace, Name: k.Namespace}
	}
	if d.ClusterRegarding != nil {
		if ref := d.ClusterRegarding(); ref != nil {
			return *ref
		}
	}
	return corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: metav1.NamespaceDefault}
}

func compareKeys(a, b Key) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Reason, b.Reason), strings.Compare(a.Rule, b.Rule),
		strings.Compare(a.Kind, b.Kind), strings.Compare(a.Message, b.Message), strings.Compare(a.Type, b.Type), strings.Compare(a.Action, b.Action))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.TrimRight(s[:n], ".-")
}

// Pending is how many occurrences wait to be written (for tests and the
// shutdown log).
func (d *Digest) Pending() int {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, f := range d.pending {
		n += f.count
	}
	return n
}
