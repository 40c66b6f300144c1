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
// then through lookup. It keeps of each only what a chain and a copy read.
type sources struct {
	byUID      map[types.UID]*source
	namespaces map[string]*source
	lookup     Lookup
}

// source is what is kept of a Namespace or an owner.
type source struct {
	namespace, name string
	kind            schema.GroupKind // empty when looked up: a metadata Get does not say it
	meta            rules.Metadata
	controller      *metav1.OwnerReference
}

func newSources(lookup Lookup) *sources {
	return &sources{byUID: map[types.UID]*source{}, namespaces: map[string]*source{}, lookup: lookup}
}

func (s *sources) add(o Object) {
	src := &source{namespace: o.GetNamespace(), kind: o.GroupVersionKind().GroupKind(), name: o.GetName(),
		meta: rules.Metadata{Labels: o.GetLabels(), Annotations: o.GetAnnotations()}}
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		src.controller = ref.DeepCopy()
	}
	if uid := o.GetUID(); uid != "" {
		s.byUID[uid] = src
	}
	if isNamespace(o) {
		s.namespaces[o.GetName()] = src
	}
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
	s.namespaces[name] = &source{meta: rules.Metadata{Labels: ns.Labels, Annotations: ns.Annotations}}
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
	s.add(o)
	s.byUID[o.UID].kind = ownerKind(&ref) // a metadata Get does not say its kind
	return s.byUID[o.UID], nil
}

// ownerKind is the kind and group ref names ("" group when its apiVersion
// does not parse: no owner kind metawatch follows is then named).
func ownerKind(ref *metav1.OwnerReference) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
}
