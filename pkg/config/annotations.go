package config

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
)

// annotationsRead lists the annotation keys anything reads on objects of kind:
// the rules that apply to it (set, remove, require, copy), copy rules when kind is
// Namespace (they read the Namespace's annotations), and cache.keepAnnotations.
// It returns nil, meaning every annotation, when keepAnnotations has "*",
// except for Secrets: kubectl's last-applied-configuration annotation holds
// a Secret's data, so their annotations are kept only when named one by one.
func annotationsRead(c *Config, kind string) sets.Set[string] {
	keep := sets.New[string]()
	if c.Cache != nil {
		if slices.Contains(c.Cache.KeepAnnotations, allAnnotations) && kind != "Secret" {
			return nil
		}
		keep.Insert(c.Cache.KeepAnnotations...)
		keep.Delete(allAnnotations)
	}
	for _, r := range c.Rules {
		if r.CopyFromNamespace != nil && kind == "Namespace" {
			keep.Insert(r.CopyFromNamespace.Annotations...)
		}
		if r.CopyFromOwner != nil && slices.Contains(r.CopyFromOwner.Kinds, kind) {
			keep.Insert(r.CopyFromOwner.Annotations...) // read on the owner
		}
		if !slices.Contains(r.KindNames(), kind) {
			continue
		}
		for k := range r.SetAnnotations {
			keep.Insert(k)
		}
		if r.CopyFromNamespace != nil {
			// Copied onto objects of kind: without them in the cache, every
			// object would look unsettled and hand edits would go unseen.
			keep.Insert(r.CopyFromNamespace.Annotations...)
		}
		if r.CopyFromOwner != nil {
			keep.Insert(r.CopyFromOwner.Annotations...)
		}
		keep.Insert(r.RemoveAnnotations...)
		keep.Insert(r.RequireAnnotations...)
	}
	return keep
}
