package preview

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rules"
)

// Options are what a preview evaluates against.
type Options struct {
	Config *config.Config
	// Scopes are the write scopes besides the configuration's own (the
	// operator's, from the guardrail flags).
	Scopes []*config.WriteScope
	// Lookup finds the Namespaces and owners the objects do not include;
	// nil: only the objects are looked in.
	Lookup Lookup
	// Identity is the write identity metawatch runs with (its
	// --field-manager): the keys its field manager owns are the ones it
	// would release. Nil: the default field manager's.
	Identity *authority.Identity
	// Guardrails are the operator's guardrails, checked as the controller checks
	// them when it decides a write; nil: config.DefaultGuardrails.
	Guardrails *config.Guardrails

	chainKinds sets.Set[schema.GroupKind] // the kinds owner chains are followed through
}

// Object is what a preview reads of an object: its metadata and kind. An
// *unstructured.Unstructured (from a file) also gives the fields a watch's
// field selector reads; a *metav1.PartialObjectMetadata comes from a list
// the server already filtered by the watch.
type Object interface {
	metav1.Object
	GroupVersionKind() schema.GroupVersionKind
}

// Report is what the rules would do to one object.
type Report struct {
	Object Ref `json:"object"`
	// Skipped says why no rule looks at the object (its kind is not
	// watched, the watch leaves it out); empty when rules do.
	Skipped string `json:"skipped,omitempty"`
	// Rules are the rules of the object's kind, each with whether it
	// applies and why.
	Rules []RuleVerdict `json:"rules,omitempty"`
	// Writes are the keys metawatch would set, remove or release.
	Writes []Write `json:"writes,omitempty"`
	// Conflicts are keys a rule wants that another field manager owns with
	// another value: metawatch leaves them (without force).
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Violations are the requirements the object fails.
	Violations []rules.Violation `json:"violations,omitempty"`
	// Left are keys metawatch would write (set, remove, or release) but
	// leaves as they are, because a guardrail forbids it.
	Left []rules.Left `json:"left,omitempty"`
	// Notes are what the preview could not know (a Namespace or owner not
	// found, managedFields not given).
	Notes []string `json:"notes,omitempty"`
}

// Ref names an object.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// RuleVerdict is whether a rule applies to the object, and why (not).
type RuleVerdict struct {
	Rule    string `json:"rule"`
	Applies bool   `json:"applies"`
	Why     string `json:"why"`
}

// Write is one key metawatch would write.
type Write struct {
	Map    string `json:"map"` // labels or annotations
	Key    string `json:"key"`
	Action string `json:"action"` // set, adopt, remove, release
	Value  string `json:"value,omitempty"`
	// Was is the object's value before ("" and Had false: absent).
	Was  string `json:"was,omitempty"`
	Had  bool   `json:"had"`
	Rule string `json:"rule,omitempty"`
	// From is where the value comes from: the rule, a Namespace, an owner.
	From string `json:"from,omitempty"`
}

// Conflict is a key metawatch would leave to another field manager.
type Conflict struct {
	Map     string `json:"map"`
	Key     string `json:"key"`
	Want    string `json:"want"`
	Have    string `json:"have"`
	Manager string `json:"manager"`
	Rule    string `json:"rule"`
}

// Changes reports whether metawatch would write the object.
func (r Report) Changes() bool { return len(r.Writes) > 0 }

// Offends reports whether the object fails a requirement, or holds a key a
// rule wants that metawatch would leave to another manager.
func (r Report) Offends() bool { return len(r.Violations)+len(r.Conflicts)+len(r.Left) > 0 }

// Preview reports on every object of objects; the others (Namespaces,
// owners) are read as sources too.
func Preview(ctx context.Context, objects []*unstructured.Unstructured, o Options) ([]Report, error) {
	p, err := New(o)
	if err != nil {
		return nil, err
	}
	for _, obj := range objects {
		p.AddSource(obj)
	}
	out := make([]Report, 0, len(objects))
	for _, obj := range objects {
		r, err := p.Report(ctx, obj)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Previewer reports on objects one at a time, with the sources it was
// given (Add) and its Lookup.
type Previewer struct {
	opts   Options
	byKind map[string][]rules.Rule
	src    *sources
}

// New compiles o's rules.
func New(o Options) (*Previewer, error) {
	byKind, err := rules.Compile(o.Config)
	if err != nil {
		return nil, err
	}
	o.chainKinds = config.OwnerChainKinds(o.Config)
	if o.Guardrails == nil {
		defaults := config.DefaultGuardrails()
		o.Guardrails = &defaults
	}
	return &Previewer{opts: o, byKind: byKind, src: newSources(o.Lookup, copiedBy(byKind, o.chainKinds))}, nil
}

// HasRules reports whether any rule has kind.
func (p *Previewer) HasRules(kind string) bool { return len(p.byKind[kind]) > 0 }

// AddSource makes obj (a Namespace, an owner) a source of the objects
// reported on after: only its uid, kind, name, controller and the keys
// the rules copy are kept, and nothing of an object of another kind.
func (p *Previewer) AddSource(obj Object) { p.src.add(obj, obj.GroupVersionKind().GroupKind()) }

// Report is what the rules would do to obj.
func (p *Previewer) Report(ctx context.Context, obj Object) (Report, error) {
	r, err := p.opts.report(ctx, obj, p.byKind[obj.GroupVersionKind().Kind], p.src)
	if err != nil {
		return r, fmt.Errorf("%s: %w", refOf(obj), err)
	}
	return r, nil
}

func refOf(obj Object) Ref {
	return Ref{Kind: obj.GroupVersionKind().Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

func (o Options) report(ctx context.Context, obj Object, kindRules []rules.Rule, src *sources) (Report, error) {
	rep := Report{Object: refOf(obj)}
	w := o.watchOf(obj)
	kind := obj.GroupVersionKind().GroupKind()
	switch {
	case w == nil && isNamespace(obj) && config.CopiesFromNamespaces(o.Config):
		rep.Skipped = "no rule writes Namespaces; read as the source of copyFromNamespace"
		return rep, nil
	case w == nil && o.chainKinds.Has(kind):
		rep.Skipped = fmt.Sprintf("no rule writes %s; read as an owner on the chains of copyFromOwner", rep.Object.Kind)
		return rep, nil
	case w == nil:
		rep.Skipped = fmt.Sprintf("the configuration watches no %s", config.KindRef(kind))
		return rep, nil
	}
	if why := leftOut(w, obj); why != "" {
		rep.Skipped = why
		return rep, nil
	}
	if namespace := writeNamespace(obj); !o.allows(namespace) {
		rep.Skipped = fmt.Sprintf("namespace %q is outside the write scope: metawatch neither writes nor audits it", namespace)
		return rep, nil
	}
	var applying []rules.Rule
	for _, r := range kindRules {
		v := RuleVerdict{Rule: r.Name, Applies: true, Why: "its match selects the object"}
		switch {
		case r.Match != nil && !r.Match.Matches(labels.Set(obj.GetLabels())):
			v.Applies, v.Why = false, fmt.Sprintf("match.labelSelector %q does not select the object", r.Match.String())
		case r.Match == nil || r.Match.Empty():
			v.Why = "it has no match: every " + rep.Object.Kind
		}
		rep.Rules = append(rep.Rules, v)
		if v.Applies {
			applying = append(applying, r)
		}
	}
	s, waits, notes, err := src.of(ctx, obj, kindRules, o.chainKinds)
	if err != nil {
		return rep, err
	}
	rep.Notes = append(rep.Notes, notes...)
	if waits {
		return rep, nil // the controller writes and audits nothing until the source comes
	}
	s.rules = applying
	current := rules.Metadata{Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}
	result := rules.Evaluate(applying, current, s.Sources)
	rep.Violations = result.Violations
	m := managersOf(obj, o.Identity.Name())
	if gk := obj.GroupVersionKind().GroupKind(); !o.Guardrails.AllowsKind(gk, obj.GetNamespace() != "") {
		rep.Left = leftAll(m, current, config.RefusedKind)
		return rep, nil // audited, never written: not even a release
	}
	result, rep.Left = rules.WithinGuardrails(result, applying, current, func(what config.MetadataMap, k string) bool { return m.mine(what.Plural(), k) }, o.Guardrails)
	rep.Writes, rep.Conflicts, notes = changes(obj, m, result, s)
	rep.Notes = append(rep.Notes, notes...)
	return rep, nil
}

// writeNamespace is the namespace the write scope counts the object in.
func writeNamespace(obj Object) string {
	if isNamespace(obj) {
		return obj.GetName()
	}
	return obj.GetNamespace()
}

func isNamespace(obj Object) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Kind == "Namespace" && gvk.Group == ""
}

func (o Options) allows(ns string) bool {
	for _, s := range append([]*config.WriteScope{o.Config.WriteScope}, o.Scopes...) {
		if !s.Allows(ns) {
			return false
		}
	}
	return true
}

// watchOf is the configuration's watch of obj's kind and group (a watch
// without apiVersion is of the built-in kind, never of a custom resource
// called the same), nil if none. The version does not matter: the API
// server serves an object in every version of its group.
func (o Options) watchOf(obj Object) *config.Watch {
	kind := obj.GroupVersionKind().GroupKind()
	for i, w := range o.Config.Watches {
		if w.GroupVersionKind().GroupKind() == kind {
			return &o.Config.Watches[i]
		}
	}
	return nil
}

// leftOut says why the watch w does not cache obj, "" if it does. Only an
// object from a file has the fields a field selector reads; a listed one
// was selected by the server.
func leftOut(w *config.Watch, obj Object) string {
	if len(w.Namespaces) > 0 && !slices.Contains(w.Namespaces, obj.GetNamespace()) {
		return fmt.Sprintf("the %s watch's namespaces %v leave out namespace %q", w.Kind, w.Namespaces, obj.GetNamespace())
	}
	if sel, _ := labels.Parse(w.LabelSelector); !sel.Matches(labels.Set(obj.GetLabels())) {
		return fmt.Sprintf("the %s watch's labelSelector %q does not select it", w.Kind, w.LabelSelector)
	}
	u, fromFile := obj.(*unstructured.Unstructured)
	if sel, _ := fields.ParseSelector(w.FieldSelector); fromFile && !sel.Matches(fieldSet(u, sel)) {
		return fmt.Sprintf("the %s watch's fieldSelector %q does not select it", w.Kind, w.FieldSelector)
	}
	return ""
}

// fieldSet is the object's values of the fields sel reads.
func fieldSet(obj *unstructured.Unstructured, sel fields.Selector) fields.Set {
	set := fields.Set{}
	for _, req := range sel.Requirements() {
		set[req.Field] = fieldValue(obj, req.Field)
	}
	return set
}

// fieldValue is a field selector's field of obj ("" when absent), as the
// API server reads it: a dotted path into the object.
func fieldValue(obj *unstructured.Unstructured, path string) string {
	v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...)
	if !found || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}
