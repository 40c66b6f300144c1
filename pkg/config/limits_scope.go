package config

import (
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// clusterScopedBuiltIns are the built-in kinds that are not namespaced. The
// client-go scheme knows every built-in kind but not its scope (that comes
// from discovery), so `metawatch check` without a cluster tells them from
// this list, for --writable-kinds=*.
var clusterScopedBuiltIns = sets.New(
	"Namespace", "Node", "PersistentVolume", "ComponentStatus",
	"ClusterRole", "ClusterRoleBinding",
	"StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass",
	"CustomResourceDefinition", "APIService",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
	"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
	"PriorityClass", "RuntimeClass", "IngressClass", "IPAddress", "ServiceCIDR",
	"CertificateSigningRequest", "ClusterTrustBundle",
	"FlowSchema", "PriorityLevelConfiguration",
	"DeviceClass", "ResourceSlice", "StorageVersionMigration",
)

// BuiltInScope is the scope of built-in kinds, known without a cluster; a
// kind that is not built in is unknown.
func BuiltInScope(kind string) (namespaced, known bool) {
	if clusterScopedBuiltIns.Has(kind) {
		return false, true
	}
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.Kind == kind && gvk.Version != "__internal" {
			return true, true
		}
	}
	return false, false
}

// ResolvedScope is the scope of the watched kinds, as the cluster serves them.
func ResolvedScope(watches []ResolvedWatch) KindScope {
	namespaced := map[string]bool{}
	for _, w := range watches {
		namespaced[w.GVK.Kind] = w.Namespaced
	}
	return func(kind string) (bool, bool) {
		ns, ok := namespaced[kind]
		return ns, ok
	}
}
