package config

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// How rules (kinds:) and the operator (--writable-kinds) name a kind. A name
// alone is not a kind: a custom resource may be called Deployment too, and a
// rule or a limit on Deployment must not reach it. So:
//
//   - Kind.group, as kubectl writes it (Deployment.apps, Widget.example.com),
//     names the kind of that API group only; the group compares without case
//     (it is a DNS name).
//   - Kind alone names the built-in kind of that name (client-go knows it:
//     Pod, Deployment, Node), never a custom resource called the same, as a
//     watch without apiVersion does. In a rule, a name no built-in kind has
//     (Widget) names the one watch of that kind; --writable-kinds takes a
//     custom resource only with its group.
//
// Every configuration and flag value valid before meant a name alone, and
// means the same for built-in kinds.

// KindName is the kind of a rule's kinds entry, without its group:
// Deployment for Deployment.apps. Validation leaves one watch per name a
// rule names (see ruleKindWatch), so the name tells the watch.
func KindName(ref string) string {
	kind, _, _ := strings.Cut(ref, ".")
	return kind
}

// KindNames are the kinds of a rule's kinds entries, without their groups.
func (r Rule) KindNames() []string {
	names := make([]string, len(r.Kinds))
	for i, ref := range r.Kinds {
		names[i] = KindName(ref)
	}
	return names
}

// KindRef is how rules and --writable-kinds name gk: its name alone for a
// built-in kind, Kind.group for any other.
func KindRef(gk schema.GroupKind) string {
	if builtInGroupKind(gk) || gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// refNames reports whether ref (Kind or Kind.group) names gk.
func refNames(ref string, gk schema.GroupKind) bool {
	kind, group, qualified := strings.Cut(ref, ".")
	if kind != gk.Kind {
		return false
	}
	if qualified {
		return strings.EqualFold(group, gk.Group)
	}
	return builtInGroupKind(gk)
}

// builtInGroupKind reports whether client-go knows gk: a kind every
// Kubernetes API server of its version serves, not a custom resource.
func builtInGroupKind(gk schema.GroupKind) bool {
	for _, g := range builtInGroups(gk.Kind) {
		if g == gk.Group {
			return true
		}
	}
	return false
}

// builtInGroups lists the API groups client-go knows kind in, "" (core) first.
func builtInGroups(kind string) []string {
	var groups []string
	seen := map[string]bool{}
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.Kind == kind && gvk.Version != "__internal" && !seen[gvk.Group] {
			seen[gvk.Group] = true
			groups = append(groups, gvk.Group)
		}
	}
	sort.Strings(groups)
	return groups
}

// watchGroupKind is the kind a watch names, as far as it is known offline:
// its apiVersion's group, else the built-in kind's (the core group first, as
// Resolve picks it).
func watchGroupKind(w Watch) schema.GroupKind {
	return w.GroupVersionKind().GroupKind()
}

// GroupVersionKind is the kind w names as far as it is known without a
// cluster: its apiVersion, else the built-in kind's group (the core group
// first, as Resolve picks it) in a version client-go knows it in.
func (w Watch) GroupVersionKind() schema.GroupVersionKind {
	if w.APIVersion != "" {
		gv, _ := schema.ParseGroupVersion(w.APIVersion) // validated with the watch
		return gv.WithKind(w.Kind)
	}
	gvk := schema.GroupVersionKind{Kind: w.Kind}
	if groups := builtInGroups(w.Kind); len(groups) > 0 {
		gvk.Group = groups[0]
	}
	for known := range clientgoscheme.Scheme.AllKnownTypes() {
		if known.GroupKind() == gvk.GroupKind() && known.Version != "__internal" && (gvk.Version == "" || known.Version < gvk.Version) {
			gvk.Version = known.Version
		}
	}
	return gvk
}

// ruleKindWatch finds the watch a rule's kinds entry names, or says why
// there is none: no watch of that kind, or the entry would not tell two
// watches of one name apart. The controller keeps rules per kind name, so a
// rule may name a kind only where one watch has that name.
func ruleKindWatch(ref string, watches []Watch) (int, string) {
	kind := KindName(ref)
	var same []int
	for i, w := range watches {
		if w.Kind == kind {
			same = append(same, i)
		}
	}
	switch {
	case len(same) == 0:
		return -1, "not a watched kind: add a watch for it under watches"
	case len(same) > 1:
		return -1, sharedKindName(ref, watches, same)
	}
	i := same[0]
	gk := watchGroupKind(watches[i])
	if _, _, qualified := strings.Cut(ref, "."); !qualified && len(builtInGroups(kind)) == 0 {
		return i, "" // a name only a custom resource has: the one watch of it
	}
	if !refNames(ref, gk) {
		return -1, fmt.Sprintf("names %s, which no watch watches; watches[%d] watches %s: write %s to apply the rule to it",
			describeRef(ref), i, KindRef(gk), KindRef(gk))
	}
	return i, ""
}

// sharedKindName is the error of a rule's kinds entry whose name several
// watches have.
func sharedKindName(ref string, watches []Watch, same []int) string {
	described := make([]string, len(same))
	groups := map[schema.GroupKind]bool{}
	for j, i := range same {
		described[j] = fmt.Sprintf("watches[%d] %s", i, KindRef(watchGroupKind(watches[i])))
		groups[watchGroupKind(watches[i])] = true
	}
	if len(groups) == 1 {
		return fmt.Sprintf("%s is watched twice (%s): merge the watches (one watch per kind)", KindName(ref), strings.Join(described, " and "))
	}
	return fmt.Sprintf("%s is the kind of %s, of different API groups, and metawatch keeps rules per kind name: a rule on one would run on all of them, "+
		"whichever group it names; remove the watches of %s no rule should write (two watched kinds of one name cannot both have rules)",
		KindName(ref), strings.Join(described, " and "), KindName(ref))
}

// describeRef says which kind ref names, in words.
func describeRef(ref string) string {
	kind, group, qualified := strings.Cut(ref, ".")
	if qualified {
		return fmt.Sprintf("%s of API group %s", kind, group)
	}
	return fmt.Sprintf("the built-in %s (%s alone never names a custom resource)", KindRef(schema.GroupKind{Group: firstOr(builtInGroups(kind), ""), Kind: kind}), kind)
}

func firstOr(s []string, or string) string {
	if len(s) == 0 {
		return or
	}
	return s[0]
}

// validateRuleKinds checks a rule's kinds entries: each names one watch.
func validateRuleKinds(p *field.Path, kinds []string, watches []Watch) field.ErrorList {
	if len(kinds) == 0 {
		return field.ErrorList{field.Required(p, "the watched kinds the rule applies to, e.g. [Pod]")}
	}
	var errs field.ErrorList
	seen := map[int]int{}
	for j, ref := range kinds {
		if msg := kindRefSyntax(ref); msg != "" {
			errs = append(errs, field.Invalid(p.Index(j), ref, msg))
			continue
		}
		i, why := ruleKindWatch(ref, watches)
		if why != "" {
			errs = append(errs, field.Invalid(p.Index(j), ref, why))
			continue
		}
		if first, dup := seen[i]; dup {
			e := field.Duplicate(p.Index(j), ref)
			e.Detail = fmt.Sprintf("names the same watch as %s", p.Index(first))
			errs = append(errs, e)
		}
		seen[i] = j
	}
	return errs
}

// kindRefSyntax says what is wrong with ref as Kind or Kind.group, "" if nothing.
func kindRefSyntax(ref string) string {
	kind, group, qualified := strings.Cut(ref, ".")
	if !kindName.MatchString(kind) {
		return "not a kind: kinds are case-sensitive, start with an upper-case letter and have only letters and digits (e.g. Pod), " +
			"optionally followed by their API group as kubectl writes it (e.g. Deployment.apps)"
	}
	if msgs := validation.IsDNS1123Subdomain(strings.ToLower(group)); qualified && len(msgs) > 0 {
		return fmt.Sprintf("%q is not an API group (%s): write Kind.group, e.g. Deployment.apps or Widget.example.com", group, strings.Join(msgs, "; "))
	}
	return ""
}
