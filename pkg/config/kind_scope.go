package config

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// clusterScopedBuiltIns are the built-in kinds that are not namespaced, by
// group. The client-go scheme knows every built-in kind but not its scope
// (that comes from discovery), so `metawatch check` without a cluster tells
// them from this list, for --writable-kinds=*. With a cluster, discovery's
// scope is used instead (ResolvedScope). TestBuiltInScopeIsTheScopeOfEveryServedGroup
// compares it with an API server that serves every group, alpha ones too.
var clusterScopedBuiltIns = sets.New(
	groupKind("", "Namespace"), groupKind("", "Node"), groupKind("", "PersistentVolume"), groupKind("", "ComponentStatus"),
	groupKind("rbac.authorization.k8s.io", "ClusterRole"), groupKind("rbac.authorization.k8s.io", "ClusterRoleBinding"),
	groupKind("storage.k8s.io", "StorageClass"), groupKind("storage.k8s.io", "CSIDriver"), groupKind("storage.k8s.io", "CSINode"),
	groupKind("storage.k8s.io", "VolumeAttachment"), groupKind("storage.k8s.io", "VolumeAttributesClass"),
	groupKind("apiextensions.k8s.io", "CustomResourceDefinition"), groupKind("apiregistration.k8s.io", "APIService"),
	groupKind("admissionregistration.k8s.io", "MutatingWebhookConfiguration"), groupKind("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
	groupKind("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"), groupKind("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
	groupKind("admissionregistration.k8s.io", "MutatingAdmissionPolicy"), groupKind("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
	groupKind("scheduling.k8s.io", "PriorityClass"), groupKind("node.k8s.io", "RuntimeClass"),
	groupKind("networking.k8s.io", "IngressClass"), groupKind("networking.k8s.io", "IPAddress"), groupKind("networking.k8s.io", "ServiceCIDR"),
	groupKind("certificates.k8s.io", "CertificateSigningRequest"), groupKind("certificates.k8s.io", "ClusterTrustBundle"),
	groupKind("flowcontrol.apiserver.k8s.io", "FlowSchema"), groupKind("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
	groupKind("resource.k8s.io", "DeviceClass"), groupKind("resource.k8s.io", "ResourceSlice"), groupKind("resource.k8s.io", "DeviceTaintRule"), groupKind("resource.k8s.io", "ResourcePoolStatusRequest"),
	groupKind("storagemigration.k8s.io", "StorageVersionMigration"), groupKind("internal.apiserver.k8s.io", "StorageVersion"),
)

func groupKind(group, kind string) schema.GroupKind {
	return schema.GroupKind{Group: group, Kind: kind}
}

// BuiltInScope is the scope of a built-in kind, known without a cluster; a
// kind that is not built in is unknown.
func BuiltInScope(kind schema.GroupKind) (namespaced, known bool) {
	if clusterScopedBuiltIns.Has(kind) {
		return false, true
	}
	return builtInGroupKind(kind), builtInGroupKind(kind)
}

// OfflineScope is the scope of c's watched kinds without a cluster: the
// group their watch names (watchGroupKind), the scope BuiltInScope says.
func OfflineScope(c *Config) KindScope {
	kinds := map[string]schema.GroupKind{}
	for _, w := range c.Watches {
		kinds[w.Kind] = watchGroupKind(w)
	}
	return func(kind string) (schema.GroupKind, bool, bool) {
		gk, ok := kinds[kind]
		if !ok {
			gk = schema.GroupKind{Kind: kind}
		}
		namespaced, known := BuiltInScope(gk)
		return gk, namespaced, known
	}
}

// ResolvedScope is the scope of the watched kinds, as the cluster serves them.
func ResolvedScope(watches []ResolvedWatch) KindScope {
	byName := map[string]ResolvedWatch{}
	for _, w := range watches {
		if _, dup := byName[w.GVK.Kind]; !dup || !w.OwnersOnly {
			byName[w.GVK.Kind] = w
		}
	}
	return func(kind string) (schema.GroupKind, bool, bool) {
		w, ok := byName[kind]
		if !ok {
			return schema.GroupKind{Kind: kind}, false, false
		}
		return w.GVK.GroupKind(), w.Namespaced, true
	}
}
