package reports_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// findings is a Collector of fixed findings, changed by the test.
type findings struct {
	mu       sync.Mutex
	version  uint64
	findings []reports.Finding
	passed   map[string]int
}

func (f *findings) Active() bool { return true }

func (f *findings) Version() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}

func (f *findings) Collect(b *reports.Builder) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.findings {
		b.Add(x)
	}
	for ns, n := range f.passed {
		b.Passed(ns, n)
	}
	return true
}

func (f *findings) set(fs []reports.Finding, passed map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.findings, f.passed = fs, passed
	f.version++
}

func violations(ns string, n int) []reports.Finding {
	var out []reports.Finding
	for i := range n {
		out = append(out, reports.Finding{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("pod-%03d", i), UID: "u",
			Rule: "team", Check: reports.CheckRequired, Result: reports.Fail, Message: "rule team: the object misses required metadata",
			Properties: map[string]string{"requires": "labels team"}})
	}
	return out
}

// The Writer keeps one Report per namespace with results and a
// ClusterReport, on the real CRDs: nothing while they are not served (and
// says so), written once they are, not written again while unchanged,
// bounded in results, and deleted once their namespace has none.
func TestTheWriterKeepsTheReports(t *testing.T) {
	controlplane.SkipIfShort(t)
	ctx := t.Context()
	c := testkit.OpenReportsClient(t, cp.Config)
	for _, ns := range []string{"reports-a", "reports-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	src := &findings{}
	id := reports.Names{Identity: authority.NewIdentity("metawatch-test", "")}
	w := &reports.Writer{Client: c, Guard: authority.Guard{Identity: id.Identity, Fence: authority.NewWriteFence()},
		Collector: src, MaxResults: 50, Log: testr.New(t)}
	node := reports.Finding{APIVersion: "v1", Kind: "Node", Name: "node-1", Rule: "zone", Check: reports.CheckRequired, Result: reports.Fail, Message: "rule zone"}
	src.set(append(append(violations("reports-a", 120), violations("reports-b", 3)...), node), map[string]int{"reports-a": 880})

	writes := func() float64 {
		return testkit.Metric(t, "metawatch_openreports_writes_total", map[string]string{"verb": "apply"})
	}
	before := writes()
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if testkit.Metric(t, "metawatch_openreports_available", nil) != 0 || writes() != before {
		t.Fatalf("without the CRDs: available %v, %v writes; want 0 and none", testkit.Metric(t, "metawatch_openreports_available", nil), writes()-before)
	}

	testkit.InstallOpenReports(t, cp.Config, "../..")
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := writes() - before; n != 3 {
		t.Errorf("%v reports applied, want 3 (two Reports, one ClusterReport)", n)
	}
	var a openreports.Report
	if err := c.Get(ctx, client.ObjectKey{Namespace: "reports-a", Name: id.Name()}, &a); err != nil {
		t.Fatal(err)
	}
	if a.Summary.Fail != 120 || a.Summary.Pass != 880 || len(a.Results) != 50 || a.Annotations[reports.AnnotationOmitted] != "70" || a.Source != "metawatch" {
		t.Errorf("Report reports-a: summary %+v, %d results, omitted %s: want 120 fail, 880 pass, 50 results, 70 omitted", a.Summary, len(a.Results), a.Annotations[reports.AnnotationOmitted])
	}
	if r := a.Results[0]; r.Policy != "team" || r.Rule != reports.CheckRequired || r.Result != "fail" || len(r.Subjects) != 1 || r.Subjects[0].Name != "pod-000" {
		t.Errorf("first result %+v: want policy team, rule %s, fail, on pod-000", r, reports.CheckRequired)
	}
	var cr openreports.ClusterReport
	if err := c.Get(ctx, client.ObjectKey{Name: id.Name()}, &cr); err != nil || cr.Summary.Fail != 1 {
		t.Errorf("ClusterReport: %v, summary %+v; want one fail", err, cr.Summary)
	}

	mid := writes()
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := writes() - mid; n != 0 {
		t.Errorf("%v reports applied again with nothing changed, want 0", n)
	}

	src.set(violations("reports-a", 2), nil)
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{&openreports.Report{ObjectMeta: metav1.ObjectMeta{Namespace: "reports-b", Name: id.Name()}},
		&openreports.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: id.Name()}}} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s: %v; want it deleted, its scope has no results any more", obj, obj.GetName(), err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "reports-a", Name: id.Name()}, &a); err != nil || a.Summary.Fail != 2 || a.Summary.Pass != 0 {
		t.Errorf("Report reports-a: %v, summary %+v; want 2 fails", err, a.Summary)
	}

	// A new process of the same installation finds the report left and
	// deletes it when it has nothing to report.
	src.set(nil, nil)
	again := &reports.Writer{Client: c, Guard: w.Guard, Collector: src, Log: testr.New(t)}
	if err := again.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "reports-a", Name: id.Name()}, &a); !apierrors.IsNotFound(err) {
		t.Errorf("Report reports-a left by an earlier process: %v; want it deleted", err)
	}
}

// claim is a leader's or ring member's claim the test takes and gives up.
type claim struct{ held atomic.Bool }

func (c *claim) Until(types.UID) (time.Time, bool) {
	return time.Now().Add(time.Minute), c.held.Load()
}

// Only the replica that holds the claim (the leader, or sharded the ring
// member) writes reports, and none once its fence is closed (it stops):
// a report is written once the claim is taken, and a Writer whose fence
// closed neither writes nor deletes one.
func TestOnlyTheClaimHolderWritesReports(t *testing.T) {
	controlplane.SkipIfShort(t)
	ctx := t.Context()
	c := testkit.OpenReportsClient(t, cp.Config)
	testkit.InstallOpenReports(t, cp.Config, "../..")
	const ns = "reports-claim"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	src := &findings{}
	src.set(violations(ns, 2), nil)
	id := reports.Names{Identity: authority.NewIdentity("metawatch-claim", "")}
	lease := &claim{}
	fence := authority.NewWriteFence()
	w := &reports.Writer{Client: c, Guard: authority.Guard{Identity: id.Identity, Fence: fence, Claim: lease},
		Collector: src, Log: testr.New(t)}
	key := client.ObjectKey{Namespace: ns, Name: id.Name()}
	var r openreports.Report

	if err := w.Sync(ctx); !errors.Is(err, authority.ErrLapsed) {
		t.Errorf("Sync without the claim: %v, want %v", err, authority.ErrLapsed)
	}
	if err := c.Get(ctx, key, &r); !apierrors.IsNotFound(err) {
		t.Fatalf("Report written without the claim: %v", err)
	}

	lease.held.Store(true)
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &r); err != nil || r.Summary.Fail != 2 {
		t.Fatalf("Report once the claim is held: %v, summary %+v; want 2 fails", err, r.Summary)
	}

	fence.Close(ctx)
	src.set(nil, nil)
	if err := w.Sync(ctx); err == nil {
		t.Errorf("Sync after the fence closed deleted the Report it had nothing left for; want it refused")
	}
	if err := c.Get(ctx, key, &r); err != nil {
		t.Errorf("Report after the fence closed: %v; want it left as it was", err)
	}
}
