package config

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Guardrails bound what any configuration may make rules write. The operator
// sets them by flags (chart values) that whoever edits the selectors
// ConfigMap cannot change: that editor otherwise steers a controller with
// cluster-wide patch rights. A configuration may narrow them (its own
// writeScope, a rule's reservedKeys opt-in), never widen them: one that asks
// for more is rejected as a whole.
type Guardrails struct {
	// WriteScope bounds the namespaces rules write in (--write-namespaces,
	// --exclude-write-namespaces); a configuration's writeScope narrows it.
	WriteScope WriteScope
	// WritableKinds are the kinds rules may write (--writable-kinds): a
	// built-in kind by its name (Deployment), any kind as Kind.group
	// (Deployment.apps, Widget.example.com; see kinds.go). "*" allows every
	// namespaced kind; a cluster-scoped kind (Namespace, Node, ClusterRole)
	// is writable only when named, one by one.
	WritableKinds []string
	// ProtectedKeys are labels and annotations no rule may set, copy or
	// remove (--protected-keys): exact keys, or prefixes as "prefix/*".
	ProtectedKeys []string
	// AllowedReservedKeys are the keys under Kubernetes' reserved prefixes
	// (kubernetes.io/, k8s.io/ and their subdomains) that a rule may write
	// when it lists them under reservedKeys (--allowed-reserved-keys).
	AllowedReservedKeys []string
	// AtCreation lets rules have atCreation (--allow-at-creation): metawatch
	// then creates cluster-wide MutatingAdmissionPolicies, which apply the
	// rules' keys as objects are created, within these same limits.
	AtCreation bool
}

// anyNamespacedKind is the WritableKinds entry that allows every namespaced kind.
const anyNamespacedKind = "*"

// DefaultGuardrails are the guardrails when the operator sets none: rules write
// Pods and Deployments (the kinds the chart grants patch on by default), never
// a key Kubernetes or another tool's controllers own, and no reserved key.
func DefaultGuardrails() Guardrails {
	return Guardrails{
		WritableKinds: []string{"Pod", "Deployment"},
		ProtectedKeys: slices.Clone(defaultProtectedKeys),
	}
}

// defaultProtectedKeys are keys that controllers set and depend on: removing
// or changing one breaks the controller (a Pod without pod-template-hash is
// orphaned by its ReplicaSet, which creates replacements without end) or
// lifts a security control (pod-security.kubernetes.io/enforce on a
// Namespace, RBAC aggregation on a ClusterRole).
var defaultProtectedKeys = []string{
	"kubernetes.io/*", "k8s.io/*", // the reserved prefixes themselves
	"pod-template-hash",           // Deployment → ReplicaSet → Pod
	"controller-revision-hash",    // StatefulSet, DaemonSet
	"pod-template-generation",     // DaemonSet (its pods' template generation)
	"statefulset.kubernetes.io/*", // pod-name
	"apps.kubernetes.io/*",        // pod-index
	"batch.kubernetes.io/*",       // job-name, controller-uid, job-completion-index
	"controller-uid", "job-name",  // the Job controller's legacy labels
	"pod-security.kubernetes.io/*",     // Pod Security admission
	"rbac.authorization.k8s.io/*",      // ClusterRole aggregation
	"node-role.kubernetes.io/*",        // node roles
	"node.kubernetes.io/*",             // node lifecycle and exclusions
	"node-restriction.kubernetes.io/*", // NodeRestriction admission
	"deployment.kubernetes.io/*",       // revision, desired-replicas
	"kubectl.kubernetes.io/*",          // last-applied-configuration, restartedAt
	"endpointslice.kubernetes.io/*",    // managed-by
	"service.kubernetes.io/*",          // service proxy selection
	"app.kubernetes.io/managed-by",     // the tool managing the object
	"meta.helm.sh/*",                   // Helm's release ownership
}

// String describes the guardrails for logs.
func (l *Guardrails) String() string {
	return fmt.Sprintf("writes %s in %s; protected keys %s; reserved keys allowed: %s; atCreation allowed: %t",
		listOrNone(l.WritableKinds), l.WriteScope.String(), listOrNone(l.ProtectedKeys), listOrNone(l.AllowedReservedKeys), l.AtCreation)
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ",")
}

// KindScope tells, by the name of a kind rules name (validation leaves one
// watch per such name), its group and whether it is namespaced; known is
// false when its scope cannot be told (offline, a kind that is not built in).
type KindScope func(kind string) (gk schema.GroupKind, namespaced, known bool)

// Check returns an invalid-configuration error (IsInvalid) listing every part
// of c that asks for more than the guardrails allow, each naming the rule, the key
// or kind, and the flag that forbids it; nil if c stays within them. scope
// tells the kinds' groups and scopes: the cluster's (ResolvedScope), or
// OfflineScope.
func (l *Guardrails) Check(c *Config, scope KindScope) error {
	if err := l.check(c, scope).ToAggregate(); err != nil {
		return Invalid(fmt.Errorf("the configuration asks for more than the operator allows: %w", err))
	}
	return nil
}

func (l *Guardrails) check(c *Config, scope KindScope) field.ErrorList {
	var errs field.ErrorList
	for i, r := range c.Rules {
		if !r.Writes() {
			continue // audits only read: no guardrail applies
		}
		errs = append(errs, l.checkKinds(i, r, scope)...)
		errs = append(errs, l.checkKeys(i, r)...)
		if r.AtCreation && !l.AtCreation {
			errs = append(errs, field.Forbidden(field.NewPath("rules").Index(i).Child("atCreation"), fmt.Sprintf("rule %q may not apply its keys at creation: "+
				"that needs cluster-wide admission policies, which the operator has not allowed; they allow them with --allow-at-creation "+
				"(chart: atCreation.enabled: true), or remove atCreation from the rule", r.Name)))
		}
	}
	return errs
}

func (l *Guardrails) checkKinds(i int, r Rule, scope KindScope) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("rules").Index(i).Child("kinds")
	for j, ref := range r.Kinds {
		gk, namespaced, known := scope(KindName(ref))
		if l.namesKind(gk) {
			continue
		}
		wildcard := slices.Contains(l.WritableKinds, anyNamespacedKind)
		var why string
		switch {
		case wildcard && namespaced && known:
			continue
		case wildcard && !known:
			why = "--writable-kinds=* allows namespaced kinds only, and offline whether it is namespaced is unknown (check with --kubeconfig)"
		case wildcard:
			why = "it is cluster-scoped, and --writable-kinds=* allows namespaced kinds only"
		default:
			why = "--writable-kinds allows " + listOrNone(l.WritableKinds)
		}
		errs = append(errs, field.Forbidden(p.Index(j), fmt.Sprintf("rule %q may not write %s: %s; name %s in --writable-kinds "+
			"(chart: write: true on its rbac.kinds entry), or make the rule audit only", r.Name, KindRef(gk), why, KindRef(gk))))
	}
	return errs
}

func (l *Guardrails) checkKeys(i int, r Rule) field.ErrorList {
	var errs field.ErrorList
	protected := map[string]bool{}
	for _, w := range writesOf(i, r) {
		pattern, ok := protectedBy(l.ProtectedKeys, w.key)
		if !ok || protected[w.key] {
			continue
		}
		protected[w.key] = true
		errs = append(errs, field.Forbidden(w.path, fmt.Sprintf("rule %q may not write %s: --protected-keys protects it (pattern %s); "+
			"remove it from the rule, or the pattern from --protected-keys (chart: guardrails.protectedKeys)", r.Name, w.key, pattern)))
	}
	p := field.NewPath("rules").Index(i).Child("reservedKeys")
	for j, k := range r.ReservedKeys {
		if _, ok := allowedBy(l.AllowedReservedKeys, k); ok || protected[k] {
			continue
		}
		errs = append(errs, field.Forbidden(p.Index(j), fmt.Sprintf("rule %q may not write %s: --allowed-reserved-keys allows %s; "+
			"the operator must add it there (chart: guardrails.allowedReservedKeys)", r.Name, k, listOrNone(l.AllowedReservedKeys))))
	}
	return errs
}
