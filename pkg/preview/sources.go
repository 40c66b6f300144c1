package preview

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	meta       rules.Metadata
	controller *metav1.OwnerReference
}

func newSources(lookup Lookup) *sources {
	return &sources{byUID: map[types.UID]*source{}, namespaces: map[string]*source{}, lookup: lookup}
}

func (s *sources) add(o Object) {
	src := &source{meta: rules.Metadata{Labels: o.GetLabels(), Annotations: o.GetAnnotations()}}
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

// maxOwnerDepth bounds an owner chain (a Pod's ReplicaSet's Deployment is 2).
const maxOwnerDepth = 8

// of finds the sources the applying rules copy from; notes say what was not found.
func (s *sources) of(ctx context.Context, obj Object, applying []rules.Rule) (found, []string, error) {
	f := found{rules: applying}
	var notes []string
	if ns := obj.GetNamespace(); ns != "" && rules.Copies(applying) {
		meta, err := s.namespace(ctx, ns)
		if err != nil {
			return f, nil, err
		}
		if meta == nil {
			notes = append(notes, fmt.Sprintf("Namespace %s is not among the objects%s: copyFromNamespace sets nothing until it is (the controller waits for it)", ns, s.where()))
		} else {
			f.Namespace, f.namespace = meta, ns
		}
	}
	if !rules.CopiesFromOwners(applying) {
		return f, notes, nil
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	for range maxOwnerDepth {
		if ref == nil {
			break
		}
		owner, err := s.owner(ctx, obj.GetNamespace(), *ref)
		if err != nil {
			return f, nil, err
		}
		if owner == nil {
			notes = append(notes, fmt.Sprintf("its owner %s %s is not among the objects%s: copyFromOwner sets nothing until it is (the controller waits for it)", ref.Kind, ref.Name, s.where()))
			break
		}
		f.Owners = append(f.Owners, rules.Owner{Kind: ref.Kind, Metadata: owner.meta})
		f.owners = append(f.owners, Ref{Kind: ref.Kind, Namespace: obj.GetNamespace(), Name: ref.Name})
		ref = owner.controller
	}
	return f, notes, nil
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
	if o, ok := s.byUID[ref.UID]; ok {
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
	return s.byUID[o.UID], nil
}
