package metacache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/config"
)

// ControllerIndex is the cache index of the objects of an owner chain's
// kinds (and of the kinds copyFromOwner writes) by the uid of their
// controlling owner: an owner's change reaches its descendants through it,
// as a Namespace's reaches its objects through the namespace index.
const ControllerIndex = "metawatch.controller.uid"

// IndexControllers adds ControllerIndex to every watch that keeps its
// controlling ownerReference. Call it before the cache starts.
func IndexControllers(ctx context.Context, indexer client.FieldIndexer, watches []config.ResolvedWatch) error {
	for _, w := range watches {
		if !w.KeepController {
			continue
		}
		if err := indexer.IndexField(ctx, NewObject(w.GVK), ControllerIndex, controllerUID); err != nil {
			return err
		}
	}
	return nil
}

func controllerUID(obj client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}
