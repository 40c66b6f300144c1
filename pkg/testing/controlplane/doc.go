// Package controlplane builds (once, cached by version) and starts a local
// kube-apiserver and etcd for `make run`, the tests and the bench harness.
//
// Why build instead of download: these machines reach only the Go module proxy,
// so the binaries come from source. k8s.io/kubernetes is not meant to be
// consumed as a module (its go.mod points every k8s.io/* staging module at
// ./staging/...), so Build writes a throwaway wrapper module that requires
// k8s.io/kubernetes and replaces each staging module with its published
// release (v1.36.3 pairs with v0.36.3). etcd builds from its own server module.
//
// The version is DefaultKubernetesVersion unless $METAWATCH_KUBERNETES_VERSION
// names another release from 1.34 on (`make test-versions` runs the suites
// on each minor): the staging version, the version stamped into the
// binaries and the feature gates follow it, and tests that need what an
// older version lacks skip, naming it (RequireMinor).
//
// The first build takes minutes (hack/README.md says how long), so binaries
// are cached per version outside the repository (see CacheDir), checked by
// running their --version before reuse, and written under a temporary name
// and renamed, so an interrupted build never leaves a half-written binary
// behind. A file lock lets several test binaries ask for the binaries at once:
// one builds, the others wait.
//
// Start runs them through controller-runtime's envtest with the alpha
// ShardedListAndWatch feature gate on (KEP-5866) where the version has it
// (1.36 on), and writes an admin kubeconfig.
//
// A test that needs objects the way a cluster's controllers make them
// (Deployment → ReplicaSet → Pods, Job → Pods, with controller
// ownerReferences) calls ControlPlane.StartControllerManager: it builds
// kube-controller-manager of the same version (once, cached with the node
// binaries) and runs those controllers beside the control plane until the
// test ends. There is no scheduler or kubelet, so the pods stay Pending.
package controlplane
