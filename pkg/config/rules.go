package config

import (
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateRules checks each rule on its own, then the rules against each other
// and against the watches of their kinds.
func validateRules(c *Config) field.ErrorList {
	path := field.NewPath("rules")
	var errs field.ErrorList
	names := map[string]int{}
	for i, r := range c.Rules {
		p := path.Index(i)
		errs = append(errs, validateRule(p, r, c.Watches)...)
		errs = append(errs, validateReservedKeys(i, r)...)
		if first, dup := names[r.Name]; dup && r.Name != "" {
			e := field.Duplicate(p.Child("name"), r.Name)
			e.Detail = fmt.Sprintf("rules[%d] has this name already; rule names are unique", first)
			errs = append(errs, e)
		}
		names[r.Name] = i
	}
	if len(errs) > 0 {
		return errs // conflicts between broken rules would only add noise
	}
	errs = append(errs, validateConflicts(c)...)
	errs = append(errs, validateAtCreationAcross(c)...)
	return append(errs, validateLoops(c)...)
}

func validateRule(p *field.Path, r Rule, watches []Watch) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
	}
	errs = append(errs, validateRuleKinds(p.Child("kinds"), r.Kinds, watches)...)
	if r.Match != nil {
		if _, err := labels.Parse(r.Match.LabelSelector); err != nil {
			errs = append(errs, field.Invalid(p.Child("match", "labelSelector"), r.Match.LabelSelector, err.Error()))
		}
	}
	if !hasAction(r) {
		errs = append(errs, field.Required(p, "a rule needs an action: setLabels, setAnnotations, removeLabels, "+
			"removeAnnotations, copyFromNamespace, copyFromOwner, requireLabels or requireAnnotations"))
	}
	errs = append(errs, validateRuleKeys(p, r)...)
	return append(errs, validateAtCreation(p, r)...)
}

func hasAction(r Rule) bool {
	return r.Writes() || len(r.RequireLabels)+len(r.RequireAnnotations) > 0
}

// Writes reports whether the rule writes labels or annotations (set, remove or
// copy), as opposed to only auditing them: its kinds need the patch verb.
func (r Rule) Writes() bool {
	return len(r.SetLabels)+len(r.SetAnnotations)+len(r.RemoveLabels)+len(r.RemoveAnnotations) > 0 ||
		r.CopyFromNamespace != nil || r.CopyFromOwner != nil
}

// validateRuleKeys checks keys and values with the API server's own rules.
func validateRuleKeys(p *field.Path, r Rule) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateLabels(p.Child("setLabels"), r.SetLabels)...)
	errs = append(errs, apivalidation.ValidateAnnotations(r.SetAnnotations, p.Child("setAnnotations"))...)
	errs = append(errs, validateKeys(p.Child("removeLabels"), r.RemoveLabels)...)
	errs = append(errs, validateKeys(p.Child("removeAnnotations"), r.RemoveAnnotations)...)
	errs = append(errs, validateKeys(p.Child("requireLabels"), r.RequireLabels)...)
	errs = append(errs, validateKeys(p.Child("requireAnnotations"), r.RequireAnnotations)...)
	if c := r.CopyFromNamespace; c != nil {
		cp := p.Child("copyFromNamespace")
		if len(c.Labels)+len(c.Annotations) == 0 {
			errs = append(errs, field.Required(cp, "the namespace labels or annotations to copy"))
		}
		errs = append(errs, validateKeys(cp.Child("labels"), c.Labels)...)
		errs = append(errs, validateKeys(cp.Child("annotations"), c.Annotations)...)
	}
	if c := r.CopyFromOwner; c != nil {
		errs = append(errs, validateCopyFromOwner(p.Child("copyFromOwner"), c)...)
	}
	return errs
}

func validateLabels(p *field.Path, m map[string]string) field.ErrorList {
	var errs field.ErrorList
	for k, v := range m {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p.Key(k), k, "key: "+msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(p.Key(k), v, msg))
		}
	}
	return errs
}

func validateKeys(p *field.Path, keys []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, k := range keys {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p.Index(i), k, msg))
		}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(p.Index(i), k))
		}
		seen.Insert(k)
	}
	return errs
}
