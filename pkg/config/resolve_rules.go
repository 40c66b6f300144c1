package config

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// resolveRuleNeeds adds what rules need of the watches: copyFromNamespace needs
// every Namespace in the cache (watched implicitly if the config does not), and
// a namespaced kind to copy to.
func resolveRuleNeeds(c *Config, watches []ResolvedWatch) ([]ResolvedWatch, field.ErrorList) {
	errs := checkCopyTargets(c, watches)
	copier := copyingRule(c)
	if copier < 0 {
		return watches, errs
	}
	for _, w := range watches {
		if w.GVK != namespaceGVK {
			continue
		}
		if w.narrowed() {
			errs = append(errs, field.Invalid(field.NewPath(w.Path), "Namespace", fmt.Sprintf(
				"rules[%d].copyFromNamespace needs every Namespace cached: remove this watch's selectors", copier)))
		}
		return watches, errs
	}
	implicit := wholeWatch(fmt.Sprintf("rules[%d].copyFromNamespace", copier), namespaceGVK, corev1.SchemeGroupVersion.WithResource("namespaces"), false)
	return append(watches, implicit), errs
}

// narrowed reports whether w leaves out some objects of its kind: a
// selector, or a list of namespaces.
func (w ResolvedWatch) narrowed() bool {
	return !w.Label.Empty() || !w.Field.Empty() || len(w.Namespaces) > 0
}

// wholeWatch is the implicit watch of every object of a built-in kind that a
// rule reads (at path) and the configuration does not watch.
func wholeWatch(path string, gvk schema.GroupVersionKind, resource schema.GroupVersionResource, namespaced bool) ResolvedWatch {
	return ResolvedWatch{Path: path, GVK: gvk, Resource: resource, Namespaced: namespaced, Label: labels.Everything(), Field: fields.Everything(), BuiltIn: true}
}

// CopiesFromNamespaces reports whether a rule of c copies from Namespaces:
// then every Namespace is a source.
func CopiesFromNamespaces(c *Config) bool { return copyingRule(c) >= 0 }

// copyingRule is the index of the first rule with copyFromNamespace, or -1.
func copyingRule(c *Config) int {
	for i, r := range c.Rules {
		if r.CopyFromNamespace != nil {
			return i
		}
	}
	return -1
}

func checkCopyTargets(c *Config, watches []ResolvedWatch) field.ErrorList {
	clusterScoped := map[string]bool{}
	for _, w := range watches {
		clusterScoped[w.GVK.Kind] = !w.Namespaced
	}
	var errs field.ErrorList
	for i, r := range c.Rules {
		if r.CopyFromNamespace == nil && r.CopyFromOwner == nil {
			continue
		}
		for j, kind := range r.Kinds {
			if clusterScoped[KindName(kind)] {
				errs = append(errs, field.Invalid(field.NewPath("rules").Index(i).Child("kinds").Index(j), kind,
					"is cluster-scoped: it has no namespace to copy from, nor an owner in one"))
			}
		}
	}
	return errs
}
