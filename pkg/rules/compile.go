package rules

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/metawatch/metawatch/pkg/config"
)

// Compile turns a validated configuration's rules into Rules per kind name
// (a rule's kinds name watched kinds, e.g. "Pod" or "Deployment.apps", and
// validation leaves one watch per name they name: config.KindName).
func Compile(c *config.Config) (map[string][]Rule, error) {
	byKind := map[string][]Rule{}
	for i, cr := range c.Rules {
		r, err := compileRule(cr)
		if err != nil {
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
		for _, kind := range cr.KindNames() {
			byKind[kind] = append(byKind[kind], r)
		}
	}
	return byKind, nil
}

func compileRule(cr config.Rule) (Rule, error) {
	r := Rule{
		Name: cr.Name, Force: cr.Force, AtCreation: cr.AtCreation,
		SetLabels: cr.SetLabels, SetAnnotations: cr.SetAnnotations,
		RemoveLabels: cr.RemoveLabels, RemoveAnnotations: cr.RemoveAnnotations,
		RequireLabels: cr.RequireLabels, RequireAnnotations: cr.RequireAnnotations,
		ReservedKeys: cr.ReservedKeys,
	}
	if cr.CopyFromNamespace != nil {
		r.CopyLabels, r.CopyAnnotations = cr.CopyFromNamespace.Labels, cr.CopyFromNamespace.Annotations
	}
	if o := cr.CopyFromOwner; o != nil {
		r.OwnerKinds, r.OwnerLabels, r.OwnerAnnotations = o.Kinds, o.Labels, o.Annotations
	}
	if cr.Match != nil {
		sel, err := labels.Parse(cr.Match.LabelSelector)
		if err != nil {
			return Rule{}, fmt.Errorf("match.labelSelector: %w", err)
		}
		r.Match = sel
	}
	return r, nil
}

// Copies reports whether any rule copies from the namespace.
func Copies(rules []Rule) bool {
	return slices.ContainsFunc(rules, Rule.CopiesFromNamespace)
}

// Requires reports whether any rule requires labels or annotations (audits).
func Requires(rules []Rule) bool {
	return slices.ContainsFunc(rules, func(r Rule) bool { return len(r.RequireLabels)+len(r.RequireAnnotations) > 0 })
}

// CopiesFromOwners reports whether any rule copies from an owner.
func CopiesFromOwners(rules []Rule) bool {
	return slices.ContainsFunc(rules, Rule.CopiesFromOwner)
}

// CopiesFromOwner reports whether r reads the object's owners.
func (r Rule) CopiesFromOwner() bool {
	return len(r.OwnerKinds) > 0 && len(r.OwnerLabels)+len(r.OwnerAnnotations) > 0
}

// CopiesFromNamespace reports whether r reads its namespace.
func (r Rule) CopiesFromNamespace() bool {
	return len(r.CopyLabels)+len(r.CopyAnnotations) > 0
}
