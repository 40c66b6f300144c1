package config

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// kindName is what a Kubernetes kind can be called (CamelCase, e.g. Pod, CSIDriver).
var kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// Validate checks everything that can be checked without a cluster.
func Validate(c *Config) field.ErrorList {
	path := field.NewPath("watches")
	if len(c.Watches) == 0 {
		return field.ErrorList{field.Required(path, "at least one watch is needed, e.g. `watches: [{kind: Pod}]`")}
	}
	var errs field.ErrorList
	seen := map[schema.GroupVersionKind]int{} // kind and apiVersion as written; Resolve catches aliases
	for i, w := range c.Watches {
		errs = append(errs, validateWatch(path.Index(i), w)...)
		key := schema.FromAPIVersionAndKind(w.APIVersion, w.Kind)
		if first, dup := seen[key]; dup {
			errs = append(errs, duplicateKind(path.Index(i).Child("kind"), w.Kind, first))
		}
		seen[key] = i
	}
	errs = append(errs, validateCache(c.Cache)...)
	errs = append(errs, validateWriteScope(c.WriteScope)...)
	return append(errs, validateRules(c)...)
}

func validateCache(c *Cache) field.ErrorList {
	if c == nil {
		return nil
	}
	var keys []string
	for _, k := range c.KeepAnnotations {
		if k != allAnnotations {
			keys = append(keys, k)
		}
	}
	return validateKeys(field.NewPath("cache", "keepAnnotations"), keys)
}

func duplicateKind(path *field.Path, kind string, first int) *field.Error {
	err := field.Duplicate(path, kind)
	err.Detail = fmt.Sprintf("watches[%d] already watches this kind; merge the two entries (one watch per kind)", first)
	return err
}

func validateWatch(path *field.Path, w Watch) field.ErrorList {
	var errs field.ErrorList
	switch {
	case w.Kind == "":
		errs = append(errs, field.Required(path.Child("kind"), "the kind to watch, e.g. Pod"))
	case !kindName.MatchString(w.Kind):
		errs = append(errs, field.Invalid(path.Child("kind"), w.Kind,
			"not a kind name: kinds are case-sensitive, start with an upper-case letter and have only letters and digits, e.g. Pod or StatefulSet"))
	}
	if w.APIVersion != "" {
		if _, err := schema.ParseGroupVersion(w.APIVersion); err != nil {
			errs = append(errs, field.Invalid(path.Child("apiVersion"), w.APIVersion, err.Error()))
		}
	}
	errs = append(errs, validateNamespaces(path.Child("namespaces"), w.Namespaces)...)
	if _, err := labels.Parse(w.LabelSelector); err != nil {
		errs = append(errs, field.Invalid(path.Child("labelSelector"), w.LabelSelector, err.Error()))
	}
	if _, err := fields.ParseSelector(w.FieldSelector); err != nil {
		errs = append(errs, field.Invalid(path.Child("fieldSelector"), w.FieldSelector, err.Error()))
	}
	return errs
}

func validateNamespaces(path *field.Path, namespaces []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, ns := range namespaces {
		for _, msg := range validation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(path.Index(i), ns, msg))
		}
		if seen.Has(ns) {
			errs = append(errs, field.Duplicate(path.Index(i), ns))
		}
		seen.Insert(ns)
	}
	return errs
}
