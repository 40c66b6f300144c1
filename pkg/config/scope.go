package config

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// WriteScope limits the namespaces rules may write in. Whoever can edit the
// selectors ConfigMap holds metawatch's cluster-wide patch: the scope is how
// an operator (with flags, which a ConfigMap editor cannot change) and the
// configuration itself bound that.
type WriteScope struct {
	// Namespaces rules may write in; empty: all.
	Namespaces []string `json:"namespaces,omitempty"`
	// ExcludeNamespaces rules never write in, e.g. kube-system.
	ExcludeNamespaces []string `json:"excludeNamespaces,omitempty"`
}

// Allows reports whether rules may write to an object in namespace ns; for a
// Namespace object, ns is its own name. Cluster-scoped objects of other kinds
// (ns "") are not limited by namespaces.
func (s *WriteScope) Allows(ns string) bool {
	if s == nil || ns == "" {
		return true
	}
	if slices.Contains(s.ExcludeNamespaces, ns) {
		return false
	}
	return len(s.Namespaces) == 0 || slices.Contains(s.Namespaces, ns)
}

// String describes the scope for logs.
func (s *WriteScope) String() string {
	if s == nil || len(s.Namespaces)+len(s.ExcludeNamespaces) == 0 {
		return "all namespaces"
	}
	out := "all namespaces"
	if len(s.Namespaces) > 0 {
		out = "namespaces " + strings.Join(s.Namespaces, ", ")
	}
	if len(s.ExcludeNamespaces) > 0 {
		out += " except " + strings.Join(s.ExcludeNamespaces, ", ")
	}
	return out
}

func validateWriteScope(s *WriteScope) field.ErrorList {
	if s == nil {
		return nil
	}
	p := field.NewPath("writeScope")
	errs := validateNamespaces(p.Child("namespaces"), s.Namespaces)
	errs = append(errs, validateNamespaces(p.Child("excludeNamespaces"), s.ExcludeNamespaces)...)
	for i, ns := range s.ExcludeNamespaces {
		if slices.Contains(s.Namespaces, ns) {
			errs = append(errs, field.Invalid(p.Child("excludeNamespaces").Index(i), ns, "also listed under writeScope.namespaces; list it in one of the two"))
		}
	}
	return errs
}

// validateReservedKeys refuses a rule's writes of reserved keys unless the
// rule lists each one under reservedKeys, and entries there it does not write.
func validateReservedKeys(i int, r Rule) field.ErrorList {
	p := field.NewPath("rules").Index(i)
	var errs field.ErrorList
	written := map[string]bool{}
	for _, w := range writesOf(i, r) {
		written[w.key] = true
		if reservedKey(w.key) && !slices.Contains(r.ReservedKeys, w.key) {
			errs = append(errs, field.Forbidden(w.path, fmt.Sprintf("%s is under a prefix Kubernetes reserves (kubernetes.io/, k8s.io/ and their subdomains, "+
				"e.g. pod-security.kubernetes.io/): to write it anyway, list it in %s", w.key, p.Child("reservedKeys"))))
		}
	}
	for j, k := range r.ReservedKeys {
		switch {
		case !reservedKey(k):
			errs = append(errs, field.Invalid(p.Child("reservedKeys").Index(j), k, "not a reserved key (kubernetes.io/ or k8s.io/ prefix): remove it"))
		case !written[k]:
			errs = append(errs, field.Invalid(p.Child("reservedKeys").Index(j), k, "this rule does not write it: remove it"))
		}
	}
	return errs
}
