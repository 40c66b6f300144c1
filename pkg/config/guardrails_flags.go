package config

import (
	"flag"
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
)

// BindFlags registers the guardrails' flags on fs, with l's values as their
// defaults (DefaultGuardrails for metawatch). metawatch and metawatch check take
// the same flags, so that check reports what metawatch would reject.
func (l *Guardrails) BindFlags(fs *flag.FlagSet) {
	fs.Var(&listFlag{dst: &l.WriteScope.Namespaces, parse: namespaceName}, "write-namespaces",
		"Comma-separated `namespaces` rules may write in (default: all); a configuration's writeScope can narrow this, never widen it.")
	fs.Var(&listFlag{dst: &l.WriteScope.ExcludeNamespaces, parse: namespaceName}, "exclude-write-namespaces",
		"Comma-separated `namespaces` rules never write in, e.g. kube-system.")
	fs.Var(&listFlag{dst: &l.WritableKinds, parse: writableKind}, "writable-kinds",
		"Comma-separated `kinds` rules may write, e.g. Pod,Deployment; * allows every namespaced kind. A cluster-scoped kind (Namespace, Node, ClusterRole) is writable only when named here. "+
			"A name alone is the built-in kind (Deployment is apps' only, never a custom resource called Deployment); any kind can be named with its API group as kubectl writes it, "+
			"e.g. Deployment.apps or Widget.example.com. A configuration with a rule that writes another kind is rejected. Empty: rules may only audit.")
	fs.Var(&listFlag{dst: &l.ProtectedKeys, parse: keyPattern}, "protected-keys",
		"Comma-separated label and annotation `keys` no rule may set, copy or remove: keys, or prefixes as prefix/*, matched without case (Kubectl.Kubernetes.io/x is under kubectl.kubernetes.io/*). Setting it replaces the default list, which holds "+
			"the keys Kubernetes controllers, admission and Helm depend on. A configuration with a rule that writes one is rejected.")
	fs.Var(&listFlag{dst: &l.AllowedReservedKeys, parse: keyPattern}, "allowed-reserved-keys",
		"Comma-separated `keys` under the prefixes Kubernetes reserves (kubernetes.io/, k8s.io/ and subdomains) a rule may write when it lists them under reservedKeys: keys, "+
			"or prefixes as prefix/*, e.g. topology.kubernetes.io/zone; the prefix is matched without case, the name after it exactly. Default: none. --protected-keys still applies.")
	fs.BoolVar(&l.AtCreation, "allow-at-creation", l.AtCreation,
		"Let rules have atCreation: metawatch then keeps one MutatingAdmissionPolicy and binding per such rule, cluster-wide, which apply the rule's keys "+
			"as objects are created (its identity needs create, patch, list and delete on them). Off: a configuration with atCreation is rejected.")
}

// listFlag is a comma-separated list whose first Set replaces the default,
// each item checked by parse.
type listFlag struct {
	dst   *[]string
	parse func(string) error
	set   bool
}

func (f *listFlag) String() string {
	if f.dst == nil {
		return ""
	}
	return strings.Join(*f.dst, ",")
}

func (f *listFlag) Set(v string) error {
	if !f.set {
		*f.dst, f.set = nil, true
	}
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		if err := f.parse(item); err != nil {
			return err
		}
		*f.dst = append(*f.dst, item)
	}
	return nil
}

func namespaceName(ns string) error {
	if msgs := apivalidation.ValidateNamespaceName(ns, false); len(msgs) > 0 {
		return fmt.Errorf("%q is not a namespace name: %s", ns, strings.Join(msgs, "; "))
	}
	return nil
}

// writableKind accepts "*", a built-in kind's name, or Kind.group (kinds.go).
func writableKind(ref string) error {
	if ref == anyNamespacedKind {
		return nil
	}
	if msg := kindRefSyntax(ref); msg != "" {
		return fmt.Errorf("%q is %s, or * for every namespaced kind", ref, msg)
	}
	if _, _, qualified := strings.Cut(ref, "."); !qualified && len(builtInGroups(ref)) == 0 {
		return fmt.Errorf("%q is not a built-in kind, and a kind's name alone names a built-in kind only: "+
			"name a custom resource with its API group, as kubectl writes it, e.g. %s.example.com", ref, ref)
	}
	return nil
}

// keyPattern accepts "*", a label or annotation key, or "prefix/*".
func keyPattern(p string) error {
	if p == "*" {
		return nil
	}
	if prefix, ok := strings.CutSuffix(p, "/*"); ok {
		if msgs := validation.IsDNS1123Subdomain(prefix); len(msgs) > 0 {
			return fmt.Errorf("%q: the part before /* must be a key prefix (a DNS subdomain, e.g. example.com): %s", p, strings.Join(msgs, "; "))
		}
		return nil
	}
	if msgs := validation.IsQualifiedName(p); len(msgs) > 0 {
		return fmt.Errorf("%q is not a label or annotation key, nor a prefix as prefix/*: %s", p, strings.Join(msgs, "; "))
	}
	return nil
}
