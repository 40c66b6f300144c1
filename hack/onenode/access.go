package onenode

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// ServiceAccountToken returns a token, valid for ttl, of ServiceAccount
// name in namespace, creating it if missing and binding it to clusterRole
// (unless ""): how a scraper in the cluster gets the chart's metrics-reader
// role, for the tests and the bench alike.
func ServiceAccountToken(ctx context.Context, cs kubernetes.Interface, namespace, name, clusterRole string, ttl time.Duration) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating ServiceAccount %s/%s: %w", namespace, name, err)
	}
	if clusterRole != "" {
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}}}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("binding %s/%s to ClusterRole %s: %w", namespace, name, clusterRole, err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl.Seconds()))}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// HTTPClient connects from inside the cluster's network (DialContext), to
// Service and pod addresses. It does not verify serving certificates: the
// chart's metrics endpoint serves controller-runtime's self-signed one by
// default.
func (c *Cluster) HTTPClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: c.DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// PodReady reports whether pod's Ready condition is true.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
