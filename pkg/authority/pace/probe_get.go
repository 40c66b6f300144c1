package pace

import (
	"context"
	"fmt"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// MetadataGet is a Probe that GETs the metadata of key's object of
// resource (key.Namespace empty: a cluster-scoped one), as
// PartialObjectMetadata: a read of one object from storage, a few hundred
// bytes, which API Priority and Fairness serves by cfg's user as its other
// reads. A 404 is an answer like any other (the ConfigMap not applied yet).
//
// It has a connection of its own, as another client would, so that the
// writes' streams on theirs do not delay it on this side, and no
// client-side rate limit, so that its latency is the server's alone.
func MetadataGet(cfg *rest.Config, resource schema.GroupVersionResource, key types.NamespacedName) (Probe, error) {
	own := rest.CopyConfig(cfg)
	own.QPS, own.Burst, own.RateLimiter = -1, 0, nil
	own.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	c, err := metadata.NewForConfig(own)
	if err != nil {
		return nil, fmt.Errorf("creating the write probe's client: %w", err)
	}
	get := c.Resource(resource).Namespace(key.Namespace)
	return func(ctx context.Context) error {
		_, err := get.Get(ctx, key.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}, nil
}
