package metacache

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/metawatch/metawatch/pkg/config"
)

// ControllerIndex is the cache's index of the objects of an owner chain's
// kinds (and of the kinds copyFromOwner writes) by the uid of their
// controlling owner: an owner's change reaches its descendants through it,
// as a Namespace's reaches its objects through the namespace index. List
// them with client.InNamespace (an owner's objects are in its namespace) and
// client.MatchingFields{ControllerIndex: uid}.
//
// It is registered as controller-runtime's field indexes are (their name and
// key format), so that its List finds it, but with one key per object where
// IndexField writes two (namespace/value, and value in all namespaces): an
// index entry costs about 100 B, paid by every pod.
const ControllerIndex = "metawatch.controller.uid"

// IndexControllers adds ControllerIndex to the informer of every watch that
// keeps its controlling ownerReference. Call it before the cache starts.
func IndexControllers(ctx context.Context, informers cache.Informers, watches []config.ResolvedWatch) error {
	for _, w := range watches {
		if !w.KeepController {
			continue
		}
		informer, err := informers.GetInformer(ctx, NewObject(w.GVK), cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		if err := informer.AddIndexers(toolscache.Indexers{"field:" + ControllerIndex: controllerKey}); err != nil {
			return fmt.Errorf("indexing %s by controlling owner: %w", w.GVK.Kind, err)
		}
	}
	return nil
}

// controllerKey is obj's key in ControllerIndex: namespace/uid of its
// controlling owner, as controller-runtime's List looks it up.
func controllerKey(obj any) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return []string{o.GetNamespace() + "/" + string(ref.UID)}, nil
	}
	return nil, nil
}
