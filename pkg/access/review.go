package access

import (
	"context"
	"fmt"

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

// Grant is one verb the identity holds on one resource, maybe only on some
// objects by name. A "*" in any field is a wildcard the role wrote.
type Grant struct {
	Group, Resource, Verb string
	// Names limits the grant to these objects (resourceNames); empty: all.
	Names []string
}

// Grants lists the identity's grants on resources in namespace, as the API
// server's authorizer sees them (SelfSubjectRulesReview): every ClusterRole
// bound to it, and the Roles bound in namespace. It fails when the authorizer
// cannot list them all (a webhook authorizer, for one): what is granted
// beyond them could then not be told.
func Grants(ctx context.Context, cs kubernetes.Interface, namespace string) ([]Grant, error) {
	review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	res, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if res.Status.Incomplete {
		return nil, fmt.Errorf("the API server's authorizer lists the identity's rules incompletely (%s): what it grants beyond them cannot be told", res.Status.EvaluationError)
	}
	var out []Grant
	for _, r := range res.Status.ResourceRules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, Grant{Group: g, Resource: res, Verb: v, Names: r.ResourceNames})
				}
			}
		}
	}
	return out, nil
}
