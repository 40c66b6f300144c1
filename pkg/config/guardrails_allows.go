package config

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The read-only questions below judge one kind, one key or one write scope
// against the guardrails, apart from any configuration: what an object metawatch
// left in the cluster (an admission policy) writes is judged by them after a
// restart with narrower flags, when the configuration itself may be rejected
// and no generation runs. They answer as Check does for a rule.

// KindError returns why rules may not write gk (namespaced tells its
// scope), or nil if --writable-kinds allows it (AllowsKind).
func (l *Guardrails) KindError(gk schema.GroupKind, namespaced bool) error {
	if l.AllowsKind(gk, namespaced) {
		return nil
	}
	return fmt.Errorf("--writable-kinds allows %s, not %s", listOrNone(l.WritableKinds), KindRef(gk))
}

// KeyError returns why no rule may write key, or nil: --protected-keys
// protects it, or it is under a prefix Kubernetes reserves and
// --allowed-reserved-keys does not list it (ReleaseRefusal, with the
// pattern named).
func (l *Guardrails) KeyError(key string) error {
	if pattern, ok := protectedBy(l.ProtectedKeys, key); ok {
		return fmt.Errorf("--protected-keys protects %s (pattern %s)", key, pattern)
	}
	if _, ok := allowedBy(l.AllowedReservedKeys, key); reservedKey(key) && !ok {
		return fmt.Errorf("%s is under a prefix Kubernetes reserves, and --allowed-reserved-keys allows %s", key, listOrNone(l.AllowedReservedKeys))
	}
	return nil
}

// WithinScope returns why a write limited to the namespaces each of scopes
// allows (every one of them, as the scopes of a rule combine) may reach a
// namespace the operator's --write-namespaces or --exclude-write-namespaces
// leave out, or nil if it cannot.
func (l *Guardrails) WithinScope(scopes []WriteScope) error {
	// The namespaces the scopes allow, if any lists them (nil: unbounded).
	var allowed []string
	bounded := false
	for _, s := range scopes {
		if len(s.Namespaces) == 0 {
			continue
		}
		if !bounded {
			allowed, bounded = slices.Clone(s.Namespaces), true
			continue
		}
		allowed = slices.DeleteFunc(allowed, func(ns string) bool { return !slices.Contains(s.Namespaces, ns) })
	}
	excluded := func(ns string) bool {
		return slices.ContainsFunc(scopes, func(s WriteScope) bool { return slices.Contains(s.ExcludeNamespaces, ns) })
	}
	ops := l.WriteScope
	if len(ops.Namespaces) > 0 && !bounded {
		return fmt.Errorf("it writes in every namespace, and --write-namespaces allows %s", listOrNone(ops.Namespaces))
	}
	for _, ns := range allowed {
		if !excluded(ns) && !ops.Allows(ns) {
			return fmt.Errorf("it writes in namespace %s, which the operator's write scope (%s) leaves out", ns, ops.String())
		}
	}
	for _, ns := range ops.ExcludeNamespaces {
		if !excluded(ns) && (!bounded || slices.Contains(allowed, ns)) {
			return fmt.Errorf("it writes in namespace %s, which --exclude-write-namespaces leaves out", ns)
		}
	}
	return nil
}
