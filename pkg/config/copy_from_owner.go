package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ownerKind is a kind copyFromOwner may copy from: a built-in workload whose
// controller sets controller: true on the ownerReferences of what it makes.
type ownerKind struct {
	gvk      schema.GroupVersionKind
	resource string
	// via are the kinds between it and a pod: a Deployment owns ReplicaSets,
	// which own the pods; a CronJob owns Jobs, which own the pods.
	via []string
}

var ownerKinds = map[string]ownerKind{
	"Deployment":  {gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, resource: "deployments", via: []string{"ReplicaSet"}},
	"ReplicaSet":  {gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, resource: "replicasets"},
	"StatefulSet": {gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, resource: "statefulsets"},
	"DaemonSet":   {gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, resource: "daemonsets"},
	"Job":         {gvk: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, resource: "jobs"},
	"CronJob":     {gvk: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}, resource: "cronjobs", via: []string{"Job"}},
}

func ownerKindNames() string {
	names := make([]string, 0, len(ownerKinds))
	for k := range ownerKinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func validateCopyFromOwner(p *field.Path, c *CopyFromOwner) field.ErrorList {
	var errs field.ErrorList
	if len(c.Kinds) == 0 {
		errs = append(errs, field.Required(p.Child("kinds"), "the owner kinds to copy from, e.g. [Deployment, StatefulSet, DaemonSet, CronJob]"))
	}
	seen := sets.New[string]()
	for i, k := range c.Kinds {
		if _, ok := ownerKinds[k]; !ok {
			errs = append(errs, field.NotSupported(p.Child("kinds").Index(i), k, strings.Split(ownerKindNames(), ", ")))
		}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(p.Child("kinds").Index(i), k))
		}
		seen.Insert(k)
	}
	if len(c.Labels)+len(c.Annotations) == 0 {
		errs = append(errs, field.Required(p, "the owner's labels or annotations to copy"))
	}
	errs = append(errs, validateKeys(p.Child("labels"), c.Labels)...)
	return append(errs, validateKeys(p.Child("annotations"), c.Annotations)...)
}

// ownerChainKinds are the kinds the owner chains of the configuration's
// copyFromOwner rules pass through: the listed kinds and those between them
// and the objects (ReplicaSets for Deployments, Jobs for CronJobs), with
// the first rule that needs each.
func ownerChainKinds(c *Config) map[string]int {
	kinds := map[string]int{}
	for i, r := range c.Rules {
		if r.CopyFromOwner == nil {
			continue
		}
		for _, k := range r.CopyFromOwner.Kinds {
			for _, chain := range append([]string{k}, ownerKinds[k].via...) {
				if _, ok := kinds[chain]; !ok {
					kinds[chain] = i
				}
			}
		}
	}
	return kinds
}

// OwnerChainKinds are the kinds metawatch follows on owner chains for c's
// copyFromOwner rules (ownerChainKinds, without the rule that needs each),
// with their groups: an owner of another group called the same (a custom
// ReplicaSet) ends the chain.
func OwnerChainKinds(c *Config) sets.Set[schema.GroupKind] {
	out := sets.New[schema.GroupKind]()
	for kind := range ownerChainKinds(c) {
		out.Insert(ownerKinds[kind].gvk.GroupKind())
	}
	return out
}

// MaxOwnerDepth bounds a walk up an object's controlling owners, for the
// controller and for metawatch check's preview alike: a pod's chain is at
// most Pod → Job → CronJob or Pod → ReplicaSet → Deployment; a longer one
// is a loop or something metawatch does not follow.
const MaxOwnerDepth = 4

// copiedFromOwner is what the copyFromOwner rules copy from owners of kind:
// the cache keeps these keys of an owner-only watch and no other.
func copiedFromOwner(c *Config, kind string, m MetadataMap) sets.Set[string] {
	keys := sets.New[string]()
	for _, r := range c.Rules {
		o := r.CopyFromOwner
		switch {
		case o == nil || !slices.Contains(o.Kinds, kind):
		case m == Labels:
			keys.Insert(o.Labels...)
		default:
			keys.Insert(o.Annotations...)
		}
	}
	return keys
}

// resolveOwnerNeeds marks the watches copyFromOwner needs: its target kinds
// keep their controlling ownerReference; the chain's kinds are cached whole
// (every object, on every replica, sharded or not), indexed by controlling
// owner, and watched implicitly when the configuration does not watch them,
// keeping only what the chain needs.
func resolveOwnerNeeds(c *Config, watches []ResolvedWatch) ([]ResolvedWatch, field.ErrorList) {
	chain := ownerChainKinds(c)
	if len(chain) == 0 {
		return watches, nil
	}
	targets := sets.New[string]()
	for _, r := range c.Rules {
		if r.CopyFromOwner != nil {
			targets.Insert(r.KindNames()...)
		}
	}
	var errs field.ErrorList
	watched := sets.New[string]()
	for i := range watches {
		w := &watches[i]
		kind := w.GVK.Kind
		if targets.Has(kind) {
			w.KeepController = true
		}
		rule, inChain := chain[kind]
		if !inChain || w.GVK.GroupKind() != ownerKinds[kind].gvk.GroupKind() {
			continue
		}
		watched.Insert(kind)
		w.Owner, w.KeepController = true, true
		if w.narrowed() {
			errs = append(errs, field.Invalid(field.NewPath(w.Path), kind, fmt.Sprintf(
				"rules[%d].copyFromOwner needs every %s cached (an owner outside the watch would keep its objects waiting): remove this watch's selectors and namespaces", rule, kind)))
		}
	}
	for _, kind := range sets.List(sets.KeySet(chain)) {
		if watched.Has(kind) {
			continue
		}
		o := ownerKinds[kind]
		implicit := wholeWatch(fmt.Sprintf("rules[%d].copyFromOwner", chain[kind]), o.gvk, o.gvk.GroupVersion().WithResource(o.resource), true)
		implicit.Owner, implicit.OwnersOnly, implicit.KeepController, implicit.Labels = true, true, true, copiedFromOwner(c, kind, Labels)
		watches = append(watches, implicit)
	}
	return watches, errs
}
