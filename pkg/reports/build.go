package reports

import (
	"cmp"
	"container/heap"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/rules"
)

// Source is the source of every result: what Policy Reporter groups by.
const Source = "metawatch"

// DefaultMaxResults bounds the results of one report; the rest are counted
// in its summary and in AnnotationOmitted.
const DefaultMaxResults = 1000

// MaxResultsLimit is the most results a report may be made to list: a
// result is about 430 bytes (a pod's, measured), and a report is one object,
// which the API server refuses over 1.5 MiB.
const MaxResultsLimit = 2000

// Labels and annotations of the reports metawatch writes.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelInstallation is the hash of the installation's field manager:
	// two installations never write each other's reports.
	LabelInstallation = "metawatch.dev/installation"
	// LabelMember is, sharded, the ring member (replica) that writes it.
	LabelMember = "metawatch.dev/ring-member"
	// AnnotationOmitted is how many results beyond the report's bound
	// (its configuration.limits.maxResults, --open-reports-max-results) it
	// does not list; its summary counts them.
	AnnotationOmitted = "metawatch.dev/results-omitted"
	// AnnotationFieldManager names the installation in words.
	AnnotationFieldManager = "metawatch.dev/field-manager"
)

// Checks: what a result is about (the result's rule; its policy is the
// metawatch rule).
const (
	// CheckRequired: the object misses keys a require rule asks for (fail).
	CheckRequired = "required-metadata"
	// CheckConflict: another field manager owns a key the rule sets (warn).
	CheckConflict = "conflict"
	// CheckGuardrail: a guardrail keeps metawatch from writing keys (warn).
	CheckGuardrail = "guardrail"
	// CheckRemovalHeld: the removal brake holds the object's removals (warn).
	CheckRemovalHeld = "removal-held"
	// CheckWrite: what metawatch check says the rules would write (warn);
	// its action property says set, change, remove or release.
	CheckWrite = "write"
)

// Result is a result's value, as the OpenReports API spells it.
type Result = openreports.Result

// Result values.
const (
	Fail = openreports.Result("fail")
	Warn = openreports.Result("warn")
	Pass = openreports.Result("pass")
)

// Finding is one result: what a rule finds of one object.
type Finding struct {
	APIVersion, Kind string
	Namespace, Name  string
	UID              types.UID
	// Rule is the metawatch rule ("" for keys no rule wants).
	Rule    string
	Check   string
	Result  openreports.Result
	Message string
	// Properties say more: which keys, the action, the guardrail.
	Properties map[string]string
}

// LeftKeys describes the keys a guardrail leaves on one object, for a
// CheckGuardrail result: the keys as "action map key" and the guardrails,
// each sorted and once.
func LeftKeys(ls []rules.Left) (keys, guardrails string) {
	var k, g []string
	for _, l := range ls {
		k = append(k, fmt.Sprintf("%s %s %s", l.Action, l.Map, l.Key))
		g = append(g, l.Reason)
	}
	slices.Sort(k)
	slices.Sort(g)
	return strings.Join(slices.Compact(k), ", "), strings.Join(slices.Compact(g), ", ")
}

// Names name an installation's reports after its write identity: Name is
// the reports' name in each namespace, Labels select them.
type Names struct {
	Identity *authority.Identity
	// Member is the ring member writing them, sharded; "" otherwise.
	Member string
}

// Installation is the hash of the field manager that labels the reports.
func (n Names) Installation() string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(n.Identity.Name()))
	return fmt.Sprintf("%08x", h.Sum32())
}

// Name is the name of each report: metawatch-<installation>[-<member>].
func (n Names) Name() string {
	name := "metawatch-" + n.Installation()
	if n.Member != "" {
		name += "-" + n.Member
	}
	if len(name) > 253 {
		name = strings.TrimRight(name[:253], "-.")
	}
	return name
}

// Labels are the labels of every report of the installation (and member).
func (n Names) Labels() map[string]string {
	l := map[string]string{LabelManagedBy: Source, LabelInstallation: n.Installation()}
	if n.Member != "" {
		l[LabelMember] = n.Member
	}
	return l
}

// Builder gathers findings and passes into one report per namespace and one
// cluster report, each listing at most MaxResults results (fails first,
// then by object): a million violations in one namespace are one report of
// MaxResults results whose summary counts the million.
type Builder struct {
	Names      Names
	MaxResults int
	Now        time.Time
	scopes     map[string]*scope // namespace ("" for the cluster) → what it holds
}

// scope is one report in the making.
type scope struct {
	kept    resultHeap
	summary openreports.ReportSummary
	omitted int
}

func (b *Builder) scope(ns string) *scope {
	if b.scopes == nil {
		b.scopes = map[string]*scope{}
	}
	s, ok := b.scopes[ns]
	if !ok {
		s = &scope{}
		b.scopes[ns] = s
	}
	return s
}

func (b *Builder) maxResults() int { return cmp.Or(b.MaxResults, DefaultMaxResults) }

// Add adds f to its namespace's report (cluster-scoped: the cluster report).
func (b *Builder) Add(f Finding) {
	s := b.scope(f.Namespace)
	switch f.Result {
	case Fail:
		s.summary.Fail++
	case Warn:
		s.summary.Warn++
	case Pass:
		s.summary.Pass++
		return // counted only
	default:
		s.summary.Error++
	}
	heap.Push(&s.kept, f)
	if s.kept.Len() > b.maxResults() {
		heap.Pop(&s.kept) // the largest goes
		s.omitted++
	}
}

// Passed counts n objects of namespace (cluster-scoped: "") that pass.
// Only a namespace with results gets a report: passes alone make none.
func (b *Builder) Passed(namespace string, n int) {
	if n > 0 {
		b.scope(namespace).summary.Pass += n
	}
}

// Reports are the reports built: one per namespace with results, and the
// cluster report (nil without cluster-scoped results).
func (b *Builder) Reports() (namespaced []*openreports.Report, cluster *openreports.ClusterReport) {
	namespaces := make([]string, 0, len(b.scopes))
	for ns, s := range b.scopes {
		if s.summary.Fail+s.summary.Warn+s.summary.Error > 0 {
			namespaces = append(namespaces, ns)
		}
	}
	slices.Sort(namespaces)
	for _, ns := range namespaces {
		s := b.scopes[ns]
		meta := b.meta(ns, s.omitted)
		config := &openreports.ReportConfiguration{Limits: openreports.Limits{MaxResults: b.maxResults()}}
		results := b.results(s)
		if ns == "" {
			cluster = &openreports.ClusterReport{TypeMeta: metav1.TypeMeta{APIVersion: openreports.GroupVersion.String(), Kind: "ClusterReport"},
				ObjectMeta: meta, Source: Source, Configuration: config, Summary: s.summary, Results: results}
			continue
		}
		namespaced = append(namespaced, &openreports.Report{TypeMeta: metav1.TypeMeta{APIVersion: openreports.GroupVersion.String(), Kind: "Report"},
			ObjectMeta: meta, Source: Source, Configuration: config, Summary: s.summary, Results: results})
	}
	return namespaced, cluster
}

func (b *Builder) meta(ns string, omitted int) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: b.Names.Name(), Namespace: ns, Labels: b.Names.Labels(),
		Annotations: map[string]string{AnnotationOmitted: strconv.Itoa(omitted)}}
	if b.Names.Identity != nil {
		m.Annotations[AnnotationFieldManager] = b.Names.Identity.FieldManager
	}
	return m
}

// results are s's kept findings in order, as OpenReports results.
func (b *Builder) results(s *scope) []openreports.ReportResult {
	kept := slices.Clone(s.kept)
	slices.SortFunc(kept, compareFindings)
	out := make([]openreports.ReportResult, 0, len(kept))
	ts := metav1.Timestamp{Seconds: b.Now.Unix()}
	for _, f := range kept {
		out = append(out, openreports.ReportResult{
			Source: Source, Policy: cmp.Or(f.Rule, "(no rule)"), Rule: f.Check, Category: "metadata", Result: f.Result, Timestamp: ts,
			Subjects:    []corev1.ObjectReference{{APIVersion: f.APIVersion, Kind: f.Kind, Namespace: f.Namespace, Name: f.Name, UID: f.UID}},
			Description: f.Message, Properties: f.Properties,
		})
	}
	return out
}

// compareFindings orders findings: fails first, then by object, rule and check.
func compareFindings(a, b Finding) int {
	return cmp.Or(cmp.Compare(rank(a.Result), rank(b.Result)), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name),
		strings.Compare(a.Rule, b.Rule), strings.Compare(a.Check, b.Check), strings.Compare(a.Message, b.Message), strings.Compare(string(a.UID), string(b.UID)))
}

func rank(r openreports.Result) int {
	switch r {
	case Fail:
		return 0
	case Warn:
		return 1
	}
	return 2
}

// resultHeap is a max-heap of findings: its top is the one to drop first.
type resultHeap []Finding

func (h resultHeap) Len() int           { return len(h) }
func (h resultHeap) Less(i, j int) bool { return compareFindings(h[i], h[j]) > 0 }
func (h resultHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *resultHeap) Push(x any)        { *h = append(*h, x.(Finding)) }
func (h *resultHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
