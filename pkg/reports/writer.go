package reports

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Defaults of a Writer.
var (
	// DefaultInterval bounds how often a report is written: at most once
	// an interval, and current within about one. Tests shorten it.
	DefaultInterval = time.Minute
	// DefaultPoll is how often a Writer asks whether anything changed: a
	// change after a quiet interval is written within about this long.
	DefaultPoll = 5 * time.Second
)

// Collector fills b with what the installation finds now: each finding,
// and the objects that pass. It reports false when there is nothing to
// report from (no configuration runs yet): the reports are left as they are.
type Collector interface {
	// Active reports whether a configuration runs and writes here.
	Active() bool
	Collect(b *Builder) bool
	// Version changes whenever what Collect gives may have changed.
	Version() uint64
}

// Writer keeps the installation's OpenReports reports: one Report per
// namespace with results and one ClusterReport, built from the Collector,
// server-side applied when their content changed (at most once per
// Interval), and deleted once their namespace has no results. Every write
// passes Guard (the write fence, and the leader's or the ring member's
// claim) and leaves through Client, which the process paces.
//
// Without the CRDs (openreports.io not served) it writes nothing, says so
// (a log line, metawatch_openreports_available 0) and asks again each
// Interval.
type Writer struct {
	Client client.Client
	Guard  authority.Guard
	// Member is the ring member writing the reports, sharded; "" otherwise.
	Member    string
	Collector Collector
	// MaxResults bounds each report's results (zero: DefaultMaxResults).
	MaxResults int
	// Interval and Poll: zero means the defaults.
	Interval, Poll time.Duration
	// DryRun logs what it would write, and writes nothing.
	DryRun bool
	// Stale, when set (sharded), reports whether another ring member is
	// gone for good: the reports it left are deleted.
	Stale func(ctx context.Context, member string) bool
	Log   logr.Logger

	mu        sync.Mutex
	written   map[string]uint64 // namespace ("" the cluster) → hash of the content written
	listed    bool              // the reports a previous process left were read
	available *bool
	built     time.Time // last build
	wrote     time.Time // last build that wrote something
	version   uint64    // the Collector's, at the last build
}

// NeedLeaderElection is false: the Writer runs where generations do, and
// its writes pass the claim of the mode (Guard).
func (w *Writer) NeedLeaderElection() bool { return false }

// Start keeps the reports until ctx ends.
func (w *Writer) Start(ctx context.Context) error {
	t := time.NewTicker(cmp.Or(w.Poll, DefaultPoll))
	defer t.Stop()
	for {
		if w.due(time.Now()) {
			if err := w.Sync(ctx); err != nil && ctx.Err() == nil {
				w.Log.Error(err, "writing the OpenReports reports; tried again")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// due reports whether a round should run now: an interval since the last
// one, or what it reports changed and nothing was written for an interval.
func (w *Writer) due(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	interval := cmp.Or(w.Interval, DefaultInterval)
	if now.Sub(w.built) >= interval {
		return true
	}
	return w.Collector.Version() != w.version && now.Sub(w.wrote) >= interval
}

// names are the names of this writer's reports.
func (w *Writer) names() Names { return Names{Identity: w.Guard.Identity, Member: w.Member} }

// Sync builds the reports and writes those that changed, and deletes
// those no longer needed.
func (w *Writer) Sync(ctx context.Context) error {
	if !w.Collector.Active() || !w.crdsServed(ctx) {
		return nil
	}
	now := time.Now()
	version := w.Collector.Version()
	b := &Builder{Names: w.names(), MaxResults: w.MaxResults, Now: now}
	if !w.Collector.Collect(b) {
		return nil
	}
	namespaced, cluster := b.Reports()
	if err := w.readLeftovers(ctx); err != nil {
		return err
	}
	want := map[string]client.Object{}
	for _, r := range namespaced {
		want[r.Namespace] = r
	}
	if cluster != nil {
		want[""] = cluster
	}
	var errs []error
	wrote := false
	for ns, obj := range want {
		h := contentHash(obj)
		if w.writtenHash(ns) == h {
			continue
		}
		if err := w.apply(ctx, obj); err != nil {
			errs = append(errs, err)
			continue
		}
		wrote = true
		w.setWritten(ns, h)
	}
	for _, ns := range w.writtenNamespaces() {
		if _, ok := want[ns]; ok {
			continue
		}
		if err := w.delete(ctx, ns); err != nil {
			errs = append(errs, err)
			continue
		}
		wrote = true
		w.forget(ns)
	}
	if err := w.deleteStale(ctx); err != nil {
		errs = append(errs, err)
	}
	w.mu.Lock()
	w.built, w.version = now, version
	if wrote {
		w.wrote = now
	}
	w.mu.Unlock()
	telemetry.Reports.Set(float64(len(want)))
	return errors.Join(errs...)
}

// crdsServed reports whether the API server serves the OpenReports kinds,
// and says so when that changes.
func (w *Writer) crdsServed(ctx context.Context) bool {
	var list openreports.ReportList
	err := w.Client.List(ctx, &list, client.Limit(1), client.MatchingLabels(w.names().Labels()))
	served := err == nil || (!meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) && !runtime.IsNotRegisteredError(err))
	w.mu.Lock()
	changed := w.available == nil || *w.available != served
	w.available = &served
	w.mu.Unlock()
	if changed {
		telemetry.OpenReportsAvailable.Set(map[bool]float64{true: 1, false: 0}[served])
		if served {
			w.Log.Info("writing OpenReports reports (openreports.io/v1alpha1 Report and ClusterReport)", "name", w.names().Name())
		} else {
			w.Log.Info("warning: --open-reports is on, but the API server does not serve openreports.io/v1alpha1 Reports: install the CRDs "+
				"(the chart's openReports.installCRDs, or Kyverno's or Policy Reporter's); no report is written until they are", "error", err.Error())
		}
	}
	return served
}

// readLeftovers, once, reads the reports of this identity a previous
// process left: each is rewritten, or deleted if nothing is to be reported.
func (w *Writer) readLeftovers(ctx context.Context) error {
	w.mu.Lock()
	listed := w.listed
	w.mu.Unlock()
	if listed {
		return nil
	}
	left, err := w.listMetadata(ctx, w.names().Labels())
	if err != nil {
		return fmt.Errorf("listing the reports left by an earlier run: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written == nil {
		w.written = map[string]uint64{}
	}
	for _, r := range left {
		if r.Name == w.names().Name() {
			w.written[r.Namespace] = 0 // to be written again, or deleted
		}
	}
	w.listed = true
	return nil
}

// listMetadata lists the metadata of the Reports and ClusterReports
// labelled labels (a report's results may be hundreds of kilobytes).
func (w *Writer) listMetadata(ctx context.Context, labels map[string]string) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	for _, kind := range []string{"ReportList", "ClusterReportList"} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(openreports.SchemeGroupVersion.WithKind(kind))
		if err := w.Client.List(ctx, list, client.MatchingLabels(labels)); err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// deleteStale deletes, sharded, the reports of ring members gone for good
// (a replica replaced by a rollout leaves its reports behind).
func (w *Writer) deleteStale(ctx context.Context) error {
	if w.Stale == nil || w.Member == "" {
		return nil
	}
	all, err := w.listMetadata(ctx, map[string]string{LabelInstallation: w.names().Installation()})
	if err != nil {
		return err
	}
	stale := map[string]bool{}
	var errs []error
	for _, r := range all {
		member := r.Labels[LabelMember]
		if member == "" || member == w.Member {
			continue
		}
		gone, asked := stale[member]
		if !asked {
			gone = w.Stale(ctx, member)
			stale[member] = gone
		}
		if !gone {
			continue
		}
		var obj client.Object = &openreports.Report{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name}}
		if r.Namespace == "" {
			obj = &openreports.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: r.Name}}
		}
		if w.DryRun {
			continue
		}
		err := w.Guard.Write(ctx, "", func(ctx context.Context) error { return client.IgnoreNotFound(w.Client.Delete(ctx, obj)) })
		telemetry.ReportWrites.WithLabelValues(kindOf(obj), "delete", outcome(err)).Inc()
		if err != nil {
			errs = append(errs, err)
		} else {
			w.Log.Info("deleted the report of a ring member gone", "member", member, "namespace", r.Namespace, "name", r.Name)
		}
	}
	return errors.Join(errs...)
}

// apply server-side applies obj as the installation's field manager.
func (w *Writer) apply(ctx context.Context, obj client.Object) error {
	kind := kindOf(obj)
	if w.DryRun {
		w.Log.Info("dry run: would write report", "kind", kind, "namespace", obj.GetNamespace(), "name", obj.GetName())
		telemetry.ReportWrites.WithLabelValues(kind, "apply", telemetry.ResultDryRun).Inc()
		return nil
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	target := emptyLike(obj)
	err = authority.NewWriter(w.Client, w.Guard).Patch(ctx, target, client.RawPatch(types.ApplyPatchType, body), client.ForceOwnership)
	telemetry.ReportWrites.WithLabelValues(kind, "apply", outcome(err)).Inc()
	if err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// delete deletes the report of namespace ns ("" the cluster report).
func (w *Writer) delete(ctx context.Context, ns string) error {
	var obj client.Object = &openreports.Report{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.names().Name()}}
	if ns == "" {
		obj = &openreports.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: w.names().Name()}}
	}
	kind := kindOf(obj)
	if w.DryRun {
		w.Log.Info("dry run: would delete report", "kind", kind, "namespace", ns, "name", obj.GetName())
		return nil
	}
	err := w.Guard.Write(ctx, "", func(ctx context.Context) error { return client.IgnoreNotFound(w.Client.Delete(ctx, obj)) })
	telemetry.ReportWrites.WithLabelValues(kind, "delete", outcome(err)).Inc()
	return err
}

func outcome(err error) string {
	if err != nil {
		return telemetry.ResultError
	}
	return telemetry.ResultApplied
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*openreports.ClusterReport); ok {
		return "ClusterReport"
	}
	return "Report"
}

func emptyLike(obj client.Object) client.Object {
	if _, ok := obj.(*openreports.ClusterReport); ok {
		return &openreports.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: obj.GetName()}}
	}
	return &openreports.Report{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}
