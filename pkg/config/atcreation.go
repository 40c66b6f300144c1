package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
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
	for _, name := range controllerOnlyFields(r) {
		errs = append(errs, field.Invalid(ap, true, fmt.Sprintf("only setLabels, setAnnotations and copyFromNamespace are applied at creation, "+
			"and this rule also has %s, which only the controller does: move %s into a rule of its own", name, name)))
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

// atCreationFields are the fields of a rule that atCreation accepts: the
// actions the admission policy applies (pkg/admission), and the fields that
// write nothing (the rule's name, kinds and match, audits, opt-ins). An
// allow-list: a new write action is refused with atCreation until the policy
// learns to apply it and it is added here, instead of passing validation and
// silently never applying at creation.
var atCreationFields = sets.New("name", "kinds", "match", "setLabels", "setAnnotations", "copyFromNamespace",
	"requireLabels", "requireAnnotations", "atCreation", "force", "reservedKeys")

// controllerOnlyFields lists, by their configuration names, the fields r
// sets that atCreationFields lacks.
func controllerOnlyFields(r Rule) []string {
	var out []string
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if !v.Field(i).IsZero() && !atCreationFields.Has(name) {
			out = append(out, name)
		}
	}
	return out
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

// admissionFields are the fields a watch's fieldSelector may use on a kind
// of a rule with atCreation, by kind ("": every kind): admission sees them
// as the watch will. A pod's spec fields are defaulted before admission,
// and its status.phase is Pending at creation whatever the request says.
// Other fields (a pod's status.podIP, spec.serviceAccountName, which an
// admission plugin may still change) are not known there.
var admissionFields = map[string]sets.Set[string]{
	"":    sets.New("metadata.name", "metadata.namespace"),
	"Pod": sets.New("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "status.phase"),
}

// FieldAtAdmission reports whether a watch of kind may select on field in
// the configuration of a rule with atCreation.
func FieldAtAdmission(kind, field string) bool {
	return admissionFields[""].Has(field) || admissionFields[kind].Has(field)
}

// AdmissionFieldsOf lists the fields FieldAtAdmission allows on kind.
func AdmissionFieldsOf(kind string) []string {
	return sets.List(admissionFields[""].Union(admissionFields[kind]))
}

// validateAtCreationAcross checks each rule with atCreation against the
// watches of its kinds and the other rules: its policy writes only objects
// the watch will cache (so their selectors must be expressible at
// admission), and its match must not read a key another rule writes
// (policies run in no set order at admission, and a key written there on a
// match the controller then finds false would be nobody's to release).
func validateAtCreationAcross(c *Config) field.ErrorList {
	watches := map[string]int{}
	for i, w := range c.Watches {
		watches[w.Kind] = i
	}
	var errs field.ErrorList
	for i, r := range c.Rules {
		if !r.AtCreation {
			continue
		}
		p := field.NewPath("rules").Index(i)
		for _, kind := range r.KindNames() {
			if wi, ok := watches[kind]; ok {
				errs = append(errs, validateAdmissionWatch(p, r.Name, wi, c.Watches[wi])...)
			}
		}
		errs = append(errs, validateMatchUnwritten(c, i)...)
	}
	return errs
}

// validateAdmissionWatch refuses a watch of a rule with atCreation whose
// selectors admission cannot evaluate as the watch does.
func validateAdmissionWatch(rulePath *field.Path, rule string, i int, w Watch) field.ErrorList {
	wp := field.NewPath("watches").Index(i)
	errs := validateAdmissionMatch(wp.Child("labelSelector"), w.LabelSelector)
	sel, err := fields.ParseSelector(w.FieldSelector)
	if err != nil {
		return errs // reported with the watch
	}
	for _, req := range sel.Requirements() {
		if !FieldAtAdmission(w.Kind, req.Field) {
			errs = append(errs, field.Invalid(wp.Child("fieldSelector"), w.FieldSelector, fmt.Sprintf("rule %q (%s) has atCreation, and its policy "+
				"writes only objects this watch will cache; admission does not know %s as the watch will see it, so it cannot tell: "+
				"remove atCreation from the rule, or %s from the fieldSelector (a %s watch can use %s)",
				rule, rulePath, req.Field, req.Field, w.Kind, strings.Join(AdmissionFieldsOf(w.Kind), ", "))))
		}
	}
	return errs
}

// validateMatchUnwritten refuses a rule with atCreation whose match reads
// a label another rule of a shared kind writes.
func validateMatchUnwritten(c *Config, i int) field.ErrorList {
	r := c.Rules[i]
	if r.Match == nil {
		return nil
	}
	sel, err := labels.Parse(r.Match.LabelSelector)
	if err != nil {
		return nil // reported with the rule
	}
	reqs, _ := sel.Requirements()
	var errs field.ErrorList
	for _, req := range reqs {
		for j, other := range c.Rules {
			if j == i || !sharesKind(r, other) {
				continue
			}
			for _, w := range writesOf(j, other) {
				if w.target == Labels && w.key == req.Key() {
					errs = append(errs, field.Invalid(field.NewPath("rules").Index(i).Child("match", "labelSelector"), r.Match.LabelSelector,
						fmt.Sprintf("with atCreation, the match is evaluated at admission, where the label %s is not yet as rule %q (%s) %s: "+
							"the admission policies run in no set order, and the key may be absent then; match on a label no rule writes, "+
							"or remove atCreation", req.Key(), other.Name, w.path, w)))
				}
			}
		}
	}
	return errs
}

func sharesKind(a, b Rule) bool {
	for _, k := range a.KindNames() {
		if slices.Contains(b.KindNames(), k) {
			return true
		}
	}
	return false
}
