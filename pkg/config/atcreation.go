package config

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PolicyNamePrefix starts the name of the admission policy (and of its
// binding) of a rule with atCreation: the prefix, then the rule's name.
const PolicyNamePrefix = "metawatch-"

// validateAtCreation checks what a rule with atCreation can do at admission:
// set keys and copy them from the Namespace (the policy reads the Namespace
// as the API server gives it to admission; it reads no owner), with a match
// selector CEL can express, under a name that leaves room for the prefix.
func validateAtCreation(p *field.Path, r Rule) field.ErrorList {
	if !r.AtCreation {
		return nil
	}
	ap := p.Child("atCreation")
	var errs field.ErrorList
	if len(r.SetLabels)+len(r.SetAnnotations) == 0 && r.CopyFromNamespace == nil {
		errs = append(errs, field.Invalid(ap, true, "applies setLabels, setAnnotations and copyFromNamespace as objects are created, "+
			"and this rule has none of them: add one, or remove atCreation"))
	}
	for _, other := range []struct {
		name string
		has  bool
	}{{"removeLabels", len(r.RemoveLabels) > 0}, {"removeAnnotations", len(r.RemoveAnnotations) > 0}, {"copyFromOwner", r.CopyFromOwner != nil}} {
		if name := other.name; other.has {
			errs = append(errs, field.Invalid(ap, true, fmt.Sprintf("only setLabels, setAnnotations and copyFromNamespace are applied at creation, "+
				"and this rule also has %s, which only the controller does: move %s into a rule of its own", name, name)))
		}
	}
	if limit := validation.DNS1123SubdomainMaxLength - len(PolicyNamePrefix); len(r.Name) > limit {
		errs = append(errs, field.Invalid(p.Child("name"), r.Name, fmt.Sprintf("with atCreation, the rule's admission policy is named %s<name>, "+
			"an object name of at most %d characters: shorten the name to %d characters", PolicyNamePrefix, validation.DNS1123SubdomainMaxLength, limit)))
	}
	if r.Match != nil {
		errs = append(errs, validateAdmissionMatch(p.Child("match", "labelSelector"), r.Match.LabelSelector)...)
	}
	return errs
}

// validateAdmissionMatch refuses the selector operators the admission
// policy cannot express (gt, lt: numeric comparisons of label values).
func validateAdmissionMatch(p *field.Path, selector string) field.ErrorList {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil // reported with the rule's match
	}
	reqs, _ := sel.Requirements()
	var errs field.ErrorList
	for _, req := range reqs {
		if op := req.Operator(); op == selection.GreaterThan || op == selection.LessThan {
			errs = append(errs, field.Invalid(p, selector, fmt.Sprintf("with atCreation, the match is evaluated at admission, where a numeric comparison "+
				"(> or <, on %s) has no equivalent: use =, !=, in, notin, exists or !exists", req.Key())))
		}
	}
	return errs
}
