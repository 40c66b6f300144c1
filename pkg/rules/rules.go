package rules

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
)

// Rule is one compiled rule, as it applies to one kind.
type Rule struct {
	Name  string
	Match labels.Selector // nil or empty: every object

	SetLabels, SetAnnotations       map[string]string
	RemoveLabels, RemoveAnnotations []string
	CopyLabels, CopyAnnotations     []string
	// OwnerKinds, OwnerLabels and OwnerAnnotations: copyFromOwner, the keys
	// of the nearest owner of one of these kinds.
	OwnerKinds                        []string
	OwnerLabels, OwnerAnnotations     []string
	RequireLabels, RequireAnnotations []string
	Force                             bool
	// AtCreation: an admission policy also sets the keys as objects are
	// created (see Owned.Adopt).
	AtCreation bool
	// ReservedKeys are the keys under Kubernetes' reserved prefixes the rule
	// opts in to writing (see Limits).
	ReservedKeys []string
}

// Metadata is what rules read of an object or a namespace.
type Metadata struct {
	Labels, Annotations map[string]string
}

// Owner is one controlling owner of an object, with what rules read of it.
type Owner struct {
	Kind string
	Metadata
}

// Sources are what copy actions copy from.
type Sources struct {
	// Namespace is the object's namespace; nil for a cluster-scoped object
	// or a namespace not (yet) in the cache: then copyFromNamespace wants
	// nothing, so it neither sets nor keeps a key.
	Namespace *Metadata
	// Owners is the object's chain of controlling owners, nearest first
	// (a pod's ReplicaSet, then its Deployment). copyFromOwner copies from
	// the first of its kinds; none (a bare or orphaned object): it wants
	// nothing, and the keys metawatch set are released. Keeping them instead
	// would keep, on every bare object, the keys a removed or changed rule
	// set, with no history to tell the two apart.
	Owners []Owner
}

// Owned is a key's desired value and the rule that wants it.
type Owned struct {
	Value string
	Rule  string
	Force bool
	// Adopt: the rule's admission policy may have set the key, and a key set
	// at admission is owned by no field manager. It is applied even when its
	// value is right, so that metawatch owns it (and releases it when the
	// rule no longer wants it, and puts a hand edit back).
	Adopt bool
	// Keep: no rule wants the key; metawatch owns it and the guardrails
	// forbid writing it, so it is applied at its current value, which
	// leaves it as it is (see WithinGuardrails).
	Keep bool
}

// Violation is a rule's requirement an object does not meet.
type Violation struct {
	Rule               string   `json:"rule"`
	MissingLabels      []string `json:"missingLabels,omitempty"`
	MissingAnnotations []string `json:"missingAnnotations,omitempty"`
}

// Result is what the rules want of one object.
type Result struct {
	// Labels and Annotations are every key the rules own on the object, with its value.
	Labels, Annotations map[string]Owned
	// RemoveLabels and RemoveAnnotations map each key to delete to the rule that deletes it.
	RemoveLabels, RemoveAnnotations map[string]string
	// Violations are sorted by rule name.
	Violations []Violation
}

// Evaluate applies rules to obj, copying from src.
func Evaluate(rules []Rule, obj Metadata, src Sources) Result {
	res := Result{Labels: map[string]Owned{}, Annotations: map[string]Owned{}, RemoveLabels: map[string]string{}, RemoveAnnotations: map[string]string{}}
	for _, r := range rules {
		if r.Match != nil && !r.Match.Matches(labels.Set(obj.Labels)) {
			continue
		}
		res.apply(r, obj, src)
	}
	sort.Slice(res.Violations, func(i, j int) bool { return res.Violations[i].Rule < res.Violations[j].Rule })
	return res
}

func (res *Result) apply(r Rule, obj Metadata, src Sources) {
	own(res.Labels, r, r.SetLabels)
	own(res.Annotations, r, r.SetAnnotations)
	remove(res.RemoveLabels, r.Name, r.RemoveLabels)
	remove(res.RemoveAnnotations, r.Name, r.RemoveAnnotations)
	if ns := src.Namespace; ns != nil {
		own(res.Labels, r, pick(ns.Labels, r.CopyLabels))
		own(res.Annotations, r, pick(ns.Annotations, r.CopyAnnotations))
	}
	if len(r.OwnerKinds) > 0 {
		if owner := nearest(src.Owners, r.OwnerKinds); owner != nil {
			own(res.Labels, r, pick(owner.Labels, r.OwnerLabels))
			own(res.Annotations, r, pick(owner.Annotations, r.OwnerAnnotations))
		}
	}
	v := Violation{Rule: r.Name, MissingLabels: missing(obj.Labels, r.RequireLabels), MissingAnnotations: missing(obj.Annotations, r.RequireAnnotations)}
	if len(v.MissingLabels)+len(v.MissingAnnotations) > 0 {
		res.Violations = append(res.Violations, v)
	}
}

func own(dst map[string]Owned, r Rule, values map[string]string) {
	for k, v := range values {
		dst[k] = Owned{Value: v, Rule: r.Name, Force: r.Force, Adopt: r.AtCreation}
	}
}

func remove(dst map[string]string, rule string, keys []string) {
	for _, k := range keys {
		dst[k] = rule
	}
}

// nearest is the first owner of one of kinds, or nil.
func nearest(owners []Owner, kinds []string) *Owner {
	for i := range owners {
		if slices.Contains(kinds, owners[i].Kind) {
			return &owners[i]
		}
	}
	return nil
}

// pick returns the entries of m whose keys are in keys.
func pick(m map[string]string, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func missing(m map[string]string, keys []string) []string {
	var out []string
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
