package config

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// ResolvedWatch is a Watch whose kind the cluster serves, with parsed selectors.
type ResolvedWatch struct {
	// Path is the watch's field path in the configuration, for messages.
	Path       string
	GVK        schema.GroupVersionKind
	Resource   schema.GroupVersionResource
	Namespaced bool
	// Namespaces is empty for all namespaces.
	Namespaces []string
	Label      labels.Selector
	Field      fields.Selector
	// BuiltIn kinds are served as protobuf; others (custom resources) only as JSON.
	BuiltIn bool
	// Annotations are the annotation keys the cache keeps: those the rules
	// read for this kind, and cache.keepAnnotations. Nil keeps every annotation.
	Annotations sets.Set[string]
	// Labels are the label keys the cache keeps; nil keeps every label. Only
	// an owner-only watch keeps fewer: the keys copied from it.
	Labels sets.Set[string]

	// Owner: the kind is on an owner chain of copyFromOwner. Every replica
	// caches all of its objects (a pod's owner may be in any shard), indexed
	// by their controlling owner's uid.
	Owner bool
	// OwnersOnly: watched only for copyFromOwner (not in the configuration's
	// watches): no controller of its own, and the cache keeps only uid,
	// controlling ownerReference and the copied keys.
	OwnersOnly bool
	// KeepController: the cache keeps the controlling ownerReference (every
	// other ownerReference is dropped, as for every other kind).
	KeepController bool
}

// Resolve maps every watch to the resource the cluster serves, with mapper.
// Warnings are for things that work but cost more than users may expect.
func Resolve(c *Config, mapper meta.RESTMapper) (watches []ResolvedWatch, warnings []string, err error) {
	var errs field.ErrorList
	seen := map[schema.GroupKind]string{}
	for i, w := range c.Watches {
		path := field.NewPath("watches").Index(i)
		rw, werrs, err := resolveWatch(path, w, mapper)
		if err != nil {
			return nil, warnings, err // not the configuration's fault, e.g. an unreachable API server
		}
		errs = append(errs, werrs...)
		if len(werrs) > 0 {
			continue
		}
		if first, dup := seen[rw.GVK.GroupKind()]; dup {
			errs = append(errs, field.Invalid(path.Child("kind"), w.Kind,
				fmt.Sprintf("%s already watches %s; merge the two entries (one watch per kind)", first, rw.GVK.GroupKind())))
			continue
		}
		seen[rw.GVK.GroupKind()] = path.String()
		if !rw.BuiltIn {
			warnings = append(warnings, fmt.Sprintf("%s: %s is not a built-in kind; the API server serves custom resources "+
				"as JSON, not protobuf, so each of its events costs more bytes and CPU", path, rw.GVK.GroupKind()))
		}
		watches = append(watches, rw)
	}
	if len(errs) > 0 {
		return nil, warnings, Invalid(errs.ToAggregate())
	}
	watches, errs = resolveRuleNeeds(c, watches)
	watches, ownerErrs := resolveOwnerNeeds(c, watches)
	errs = append(errs, ownerErrs...)
	for i := range watches {
		watches[i].Annotations = annotationsRead(c, watches[i].GVK.Kind)
		if watches[i].OwnersOnly {
			watches[i].Annotations = copiedFromOwner(c, watches[i].GVK.Kind, Annotations)
		}
	}
	return watches, warnings, Invalid(errs.ToAggregate())
}

// resolveWatch returns the configuration's errors, or an error of discovery itself.
func resolveWatch(path *field.Path, w Watch, mapper meta.RESTMapper) (ResolvedWatch, field.ErrorList, error) {
	mapping, err := restMapping(w, mapper)
	var discoveryErr *discoveryError
	if errors.As(err, &discoveryErr) {
		return ResolvedWatch{}, nil, discoveryErr.err
	}
	if err != nil {
		return ResolvedWatch{}, field.ErrorList{field.Invalid(path.Child("kind"), w.Kind, err.Error())}, nil
	}
	rw := ResolvedWatch{
		Path:       path.String(),
		GVK:        mapping.GroupVersionKind,
		Resource:   mapping.Resource,
		Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace,
		Namespaces: w.Namespaces,
		BuiltIn:    clientgoscheme.Scheme.Recognizes(mapping.GroupVersionKind),
	}
	if !rw.Namespaced && len(w.Namespaces) > 0 {
		return rw, field.ErrorList{field.Invalid(path.Child("namespaces"), w.Namespaces,
			fmt.Sprintf("%s is cluster-scoped; remove namespaces", w.Kind))}, nil
	}
	// Validate has already parsed both selectors; parse errors cannot happen here.
	rw.Label, _ = labels.Parse(w.LabelSelector)
	rw.Field, _ = fields.ParseSelector(w.FieldSelector)
	return rw, nil, nil
}

// discoveryError is a RESTMapper failure that says nothing about the kind:
// the API server could not be asked.
type discoveryError struct{ err error }

func (e *discoveryError) Error() string { return e.err.Error() }

// discoveryFailure is err as a discoveryError when it is not "no such kind"
// (an answer about the configuration), and nil otherwise.
func discoveryFailure(err error) error {
	if err == nil || meta.IsNoMatchError(err) {
		return nil
	}
	return &discoveryError{err: err}
}

// restMapping finds the kind's resource. Without apiVersion, the kind must be
// built in: its group comes from client-go's scheme, the core group first.
func restMapping(w Watch, mapper meta.RESTMapper) (*meta.RESTMapping, error) {
	if w.APIVersion != "" {
		gv, err := schema.ParseGroupVersion(w.APIVersion)
		if err != nil {
			return nil, err
		}
		m, err := mapper.RESTMapping(gv.WithKind(w.Kind).GroupKind(), gv.Version)
		if failure := discoveryFailure(err); failure != nil {
			return nil, failure
		}
		if err != nil {
			return nil, fmt.Errorf("the cluster does not serve %s %s (check `kubectl api-resources`): %w", w.APIVersion, w.Kind, err)
		}
		return m, nil
	}
	return mappingForBuiltIn(w.Kind, mapper)
}

func mappingForBuiltIn(kind string, mapper meta.RESTMapper) (*meta.RESTMapping, error) {
	groups := builtInGroups(kind)
	if len(groups) == 0 {
		return nil, fmt.Errorf("not a built-in kind (kinds are case-sensitive, e.g. Pod); for a custom resource set apiVersion")
	}
	var served []*meta.RESTMapping
	for _, g := range groups {
		m, err := mapper.RESTMapping(schema.GroupKind{Group: g, Kind: kind})
		if failure := discoveryFailure(err); failure != nil {
			return nil, failure
		}
		if err == nil {
			if g == "" {
				return m, nil // the core group wins, e.g. Event over events.k8s.io/Event
			}
			served = append(served, m)
		}
	}
	switch len(served) {
	case 0:
		return nil, fmt.Errorf("the cluster serves no API group with this kind (check `kubectl api-resources`)")
	case 1:
		return served[0], nil
	}
	return nil, fmt.Errorf("served by several API groups (%s); set apiVersion", describeGroups(served))
}

func describeGroups(mappings []*meta.RESTMapping) string {
	names := make([]string, len(mappings))
	for i, m := range mappings {
		names[i] = m.GroupVersionKind.GroupVersion().String()
	}
	return strings.Join(names, ", ")
}
