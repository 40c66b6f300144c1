package preview

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rules"
)

// Lookup finds the Namespaces and owners the given objects do not include
// (metawatch check --live: the cluster, read-only, metadata only). Each
// returns nil, nil for an object that does not exist.
type Lookup interface {
	Namespace(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error)
	Owner(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error)
}

// sources finds an object's Namespace and owners among the objects added,
// then through lookup. It keeps of each only what a chain and a copy read:
// its uid, kind, name, namespace, controlling owner reference and the keys
// the rules copy (not its other labels and annotations, last-applied
// included), and only of Namespaces and the kinds the chains follow, so
// that a report on a cluster of 100k pods keeps a few bytes per source.
type sources struct {
	byUID      map[types.UID]*source
	namespaces map[string]*source
	lookup     Lookup
	copied     copiedKeys
}

// copiedKeys are the keys the rules copy from Namespaces and from owners
// of each kind, and the kinds the owner chains follow.
type copiedKeys struct {
	namespace  rules.Metadata            // the keys, each with ""
	owner      map[string]rules.Metadata // by kind name, as copyFromOwner names them
	chainKinds sets.Set[schema.GroupKind]
}

func copiedBy(byKind map[string][]rules.Rule, chainKinds sets.Set[schema.GroupKind]) copiedKeys {
	c := copiedKeys{namespace: keySet(), owner: map[string]rules.Metadata{}, chainKinds: chainKinds}
	for _, kindRules := range byKind {
		for _, r := range kindRules {
			addKeys(c.namespace, r.CopyLabels, r.CopyAnnotations)
			for _, kind := range r.OwnerKinds {
				if _, ok := c.owner[kind]; !ok {
					c.owner[kind] = keySet()
				}
				addKeys(c.owner[kind], r.OwnerLabels, r.OwnerAnnotations)
			}
		}
	}
	return c
}

func keySet() rules.Metadata {
	return rules.Metadata{Labels: map[string]string{}, Annotations: map[string]string{}}
}

func addKeys(to rules.Metadata, labels, annotations []string) {
	for _, k := range labels {
		to.Labels[k] = ""
	}
	for _, k := range annotations {
		to.Annotations[k] = ""
	}
}

// kept is what a source keeps of labels and annotations: the keys of keys.
func kept(labels, annotations map[string]string, keys rules.Metadata) rules.Metadata {
	return rules.Metadata{Labels: only(labels, keys.Labels), Annotations: only(annotations, keys.Annotations)}
}

func only(m, keys map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if _, ok := keys[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// source is what is kept of a Namespace or an owner.
type source struct {
	namespace, name string
	kind            schema.GroupKind // of an owner
	meta            rules.Metadata
	controller      *metav1.OwnerReference
}

func newSources(lookup Lookup, copied copiedKeys) *sources {
	return &sources{byUID: map[types.UID]*source{}, namespaces: map[string]*source{}, lookup: lookup, copied: copied}
}

// add keeps o if it is a Namespace or of a kind the owner chains follow
// (kind: o's, which a metadata Get does not say); other objects are never
// looked for as sources.
func (s *sources) add(o Object, kind schema.GroupKind) *source {
	namespace := isNamespace(o)
	keys := s.copied.owner[kind.Kind] // none for a kind only passed through
	switch {
	case namespace:
		keys = s.copied.namespace
	case !s.copied.chainKinds.Has(kind):
		return nil
	}
	src := &source{namespace: o.GetNamespace(), kind: kind, name: o.GetName(), meta: kept(o.GetLabels(), o.GetAnnotations(), keys)}
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		src.controller = ref.DeepCopy()
	}
	if uid := o.GetUID(); uid != "" {
		s.byUID[uid] = src
	}
	if namespace {
		s.namespaces[o.GetName()] = src
	}
	return src
}

// found are an object's sources, with the names of what they came from.
type found struct {
	rules.Sources
	rules     []rules.Rule // those that apply
	namespace string
	owners    []Ref // the same order as Sources.Owners
}

// of finds the sources the rules of the object's kind copy from. waits:
// one is missing, and the controller writes and audits nothing until it
// comes (a Namespace, or an owner of a kind the chains follow); notes say
// which, and where a chain ends early.
func (s *sources) of(ctx context.Context, obj Object, kindRules []rules.Rule, chainKinds sets.Set[schema.GroupKind]) (f found, waits bool, notes []string, err error) {
	if ns := obj.GetNamespace(); ns != "" && rules.Copies(kindRules) {
		meta, err := s.namespace(ctx, ns)
		if err != nil {
			return f, false, nil, err
		}
		if meta == nil {
			return f, true, []string{fmt.Sprintf("waits: Namespace %s is not among the objects%s, and the controller writes and audits nothing of it until it is", ns, s.where())}, nil
		}
		f.Namespace, f.namespace = meta, ns
	}
	if !rules.CopiesFromOwners(kindRules) {
		return f, false, nil, nil
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	for depth := 0; ref != nil; depth++ {
		if depth == config.MaxOwnerDepth { // as the controller: no further
			notes = append(notes, fmt.Sprintf("its owner chain is longer than the %d owners metawatch follows: it stops before %s %s", config.MaxOwnerDepth, ref.Kind, ref.Name))
			break
		}
		if !chainKinds.Has(ownerKind(ref)) {
			notes = append(notes, fmt.Sprintf("its owner chain ends at %s %s, a kind copyFromOwner does not follow", config.KindRef(ownerKind(ref)), ref.Name))
			break
		}
		owner, err := s.owner(ctx, obj.GetNamespace(), *ref)
		if err != nil {
			return f, false, nil, err
		}
		if owner == nil {
			return f, true, append(notes, fmt.Sprintf("waits: its owner %s %s is not among the objects%s, and the controller writes and audits nothing of it until it is",
				ref.Kind, ref.Name, s.where())), nil
		}
		f.Owners = append(f.Owners, rules.Owner{Kind: ref.Kind, Metadata: owner.meta})
		f.owners = append(f.owners, Ref{Kind: ref.Kind, Namespace: obj.GetNamespace(), Name: ref.Name})
		ref = owner.controller
	}
	return f, false, notes, nil
}

func (s *sources) where() string {
	if s.lookup == nil {
		return " (nor looked up: --live reads it from the cluster)"
	}
	return " nor in the cluster"
}

func (s *sources) namespace(ctx context.Context, name string) (*rules.Metadata, error) {
	if ns, ok := s.namespaces[name]; ok {
		return &ns.meta, nil
	}
	if s.lookup == nil {
		return nil, nil
	}
	ns, err := s.lookup.Namespace(ctx, name)
	if err != nil || ns == nil {
		return nil, err
	}
	s.namespaces[name] = &source{meta: kept(ns.Labels, ns.Annotations, s.copied.namespace)}
	return &s.namespaces[name].meta, nil
}

// owner is the owner ref names: by uid among the sources, else looked up
// (and only if it is still the same object: same uid).
func (s *sources) owner(ctx context.Context, namespace string, ref metav1.OwnerReference) (*source, error) {
	// Owner references are namespace-local, and name their owner's kind
	// and name: one with the uid that is not that object is not the owner.
	if o, ok := s.byUID[ref.UID]; ok && o.namespace == namespace && o.name == ref.Name && (o.kind.Empty() || o.kind == ownerKind(&ref)) {
		return o, nil
	}
	if s.lookup == nil {
		return nil, nil
	}
	o, err := s.lookup.Owner(ctx, namespace, ref)
	if err != nil || o == nil || o.UID != ref.UID {
		return nil, err
	}
	// A metadata Get does not say its kind; of looks up only kinds the
	// chains follow, which add keeps.
	return s.add(o, ownerKind(&ref)), nil
}

// ownerKind is the kind and group ref names ("" group when its apiVersion
// does not parse: no owner kind metawatch follows is then named).
func ownerKind(ref *metav1.OwnerReference) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
}
