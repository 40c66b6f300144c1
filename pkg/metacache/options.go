package metacache

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/config"
)

// CacheOptions is one ByObject entry per watch, keyed by a metadata-only object
// of the watch's kind, with its server-side selectors and namespaces; loss (if
// not nil) learns of lists and watches the API server forbids.
func CacheOptions(watches []config.ResolvedWatch, loss *access.AccessLoss) cache.Options {
	byObject := make(map[client.Object]cache.ByObject, len(watches))
	for _, w := range watches {
		byObject[NewObject(w.GVK)] = byObjectFor(w)
	}
	opts := cache.Options{
		ByObject:                    byObject,
		ReaderFailOnMissingInformer: true,
		DefaultTransform:            transformFor(nil), // every watch sets its own; this covers any other informer
	}
	if loss != nil {
		opts.NewInformer = loss.NewInformer
	}
	return opts
}

func byObjectFor(w config.ResolvedWatch) cache.ByObject {
	entry := cache.ByObject{Label: w.Label, Field: w.Field, Transform: transformFor(w.Annotations)}
	if len(w.Namespaces) > 0 {
		entry.Namespaces = make(map[string]cache.Config, len(w.Namespaces))
		for _, ns := range w.Namespaces {
			entry.Namespaces[ns] = cache.Config{}
		}
	}
	return entry
}
