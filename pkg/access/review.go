package access

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// CanI asks the API server (SelfSubjectAccessReview) whether the identity may
// do verb on resource in namespace ("" for all namespaces or a cluster-scoped kind).
func CanI(ctx context.Context, cs kubernetes.Interface, verb string, resource schema.GroupVersionResource, namespace string) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: resource.Group, Version: resource.Version, Resource: resource.Resource, Namespace: namespace,
		},
	}}
	res, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}
