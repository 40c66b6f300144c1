package config

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Why a write is left undone by the guardrails, as metrics and check name it.
const (
	// RefusedKind: --writable-kinds does not allow the object's kind.
	RefusedKind = "kind"
	// RefusedNamespace: the object is outside the write scope.
	RefusedNamespace = "namespace"
	// RefusedProtected: --protected-keys protects the key.
	RefusedProtected = "protected-key"
	// RefusedReserved: the key is under a prefix Kubernetes reserves and
	// neither the rule nor --allowed-reserved-keys lets metawatch write it.
	RefusedReserved = "reserved-key"
)

// AllowsKind reports whether the guardrails let rules write objects of gk, whose
// scope is namespaced: the check a configuration passes (Check), made again
// when a write is decided, so that a write the configuration did not ask for
// (a release of a key no rule wants) stays inside --writable-kinds too.
func (l *Guardrails) AllowsKind(gk schema.GroupKind, namespaced bool) bool {
	return l.namesKind(gk) || namespaced && slices.Contains(l.WritableKinds, anyNamespacedKind)
}

// namesKind reports whether --writable-kinds names gk: by its name alone for
// a built-in kind, or as Kind.group (refNames).
func (l *Guardrails) namesKind(gk schema.GroupKind) bool {
	return slices.ContainsFunc(l.WritableKinds, func(ref string) bool { return refNames(ref, gk) })
}

// KeyRefusal says why the guardrails forbid a rule to write key (set, copy or
// remove it), "" when they allow it. optedIn are the reserved keys the rule
// lists under reservedKeys.
func (l *Guardrails) KeyRefusal(key string, optedIn []string) string {
	if why := l.ReleaseRefusal(key); why != "" {
		return why
	}
	if reservedKey(key) && !slices.Contains(optedIn, key) {
		return RefusedReserved
	}
	return ""
}

// ReleaseRefusal says why the guardrails forbid releasing key, a key metawatch
// owns that no rule wants any more (leaving it out of an apply deletes it),
// "" when they allow it. No rule opts in to a release: a reserved key is
// released only where --allowed-reserved-keys allows it.
func (l *Guardrails) ReleaseRefusal(key string) string {
	if _, protected := protectedBy(l.ProtectedKeys, key); protected {
		return RefusedProtected
	}
	if _, allowed := allowedBy(l.AllowedReservedKeys, key); reservedKey(key) && !allowed {
		return RefusedReserved
	}
	return ""
}
