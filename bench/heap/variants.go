package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/engine"
)

var podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

// variant is one way to cache the pods of a namespace.
type variant struct {
	name    string
	options func(ns string) cache.Options
	object  client.Object
	list    func() client.ObjectList
	// strip, as the engine's Manager does, removes other managers' managedFields before decoding.
	strip bool
}

func variants() []variant {
	return []variant{
		{name: "typed", object: &corev1.Pod{}, list: typedList, options: func(ns string) cache.Options {
			return cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}
		}},
		{name: "typed-strip-managedfields", object: &corev1.Pod{}, list: typedList, options: func(ns string) cache.Options {
			return cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}, DefaultTransform: cache.TransformStripManagedFields()}
		}},
		{name: "metadata", object: engine.NewObject(podGVK), list: metadataList, options: func(ns string) cache.Options {
			return cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}
		}},
		{name: "metawatch-transforms-only", object: engine.NewObject(podGVK), list: metadataList, options: metawatchOptions(sets.New[string]())},
		{name: "metawatch-all-annotations", object: engine.NewObject(podGVK), list: metadataList, options: metawatchOptions(nil), strip: true},
		// As config.Resolve sets it up when no rule reads an annotation of the kind.
		{name: "metawatch", object: engine.NewObject(podGVK), list: metadataList, options: metawatchOptions(sets.New[string]()), strip: true},
	}
}

func metawatchOptions(annotations sets.Set[string]) func(ns string) cache.Options {
	return func(ns string) cache.Options {
		return engine.CacheOptions([]config.ResolvedWatch{{
			GVK: podGVK, Namespaced: true, Namespaces: []string{ns}, Label: labels.Everything(), Field: fields.Everything(),
			Annotations: annotations,
		}})
	}
}

func typedList() client.ObjectList    { return &corev1.PodList{} }
func metadataList() client.ObjectList { return engine.NewList(podGVK) }

func variantNames() []string {
	var names []string
	for _, v := range variants() {
		names = append(names, v.name)
	}
	return names
}

func variantNamed(name string) (variant, error) {
	for _, v := range variants() {
		if v.name == name {
			return v, nil
		}
	}
	return variant{}, fmt.Errorf("unknown variant %q (have %v)", name, variantNames())
}
