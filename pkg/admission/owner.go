package admission

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownerReferences are the references of a pair to the ClusterRole named by
// Syncer.Owner: when it is deleted (helm uninstall deletes the chart's),
// kube-controller-manager's garbage collector deletes the pairs, so that no
// policy goes on writing for an installation that is gone. nil without an
// Owner. A pair is made only while its owner exists: one made with a
// reference to a deleted owner is collected at once, and one made without
// would be left behind.
func (s *Syncer) ownerReferences(ctx context.Context) ([]metav1.OwnerReference, error) {
	if s.Owner == "" {
		return nil, nil
	}
	var role rbacv1.ClusterRole
	err := s.Reader.Get(ctx, client.ObjectKey{Name: s.Owner}, &role)
	switch {
	case apierrors.IsNotFound(err):
		return nil, lasting(fmt.Errorf("the ClusterRole %s that owns the admission policies (--admission-policy-owner) does not exist: "+
			"metawatch is being uninstalled, or the flag names another ClusterRole", s.Owner))
	case apierrors.IsForbidden(err):
		return nil, lasting(fmt.Errorf("RBAC forbids reading the ClusterRole %s that owns the admission policies (--admission-policy-owner): "+
			"grant get on clusterroles named %s (the chart does)", s.Owner, s.Owner))
	case err != nil:
		return nil, err
	}
	return []metav1.OwnerReference{{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole", Name: role.Name, UID: role.UID}}, nil
}
