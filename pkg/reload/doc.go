// Package reload is where metawatch gets its configuration from: a file
// (--config-file) or the kubectl-managed selectors ConfigMap (--config-map).
//
// The ConfigMap is read with a direct, uncached client: a cached typed read
// would start a full ConfigMap informer, cluster-wide, next to the metadata one
// users may have configured (controller-runtime#1660).
package reload
