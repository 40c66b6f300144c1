package controlplane

// The minor versions that brought what metawatch uses: a test that needs one
// skips on an older server, naming it, and a test of what the product does
// without it runs there on the real server instead of on a newer one with
// the feature turned off.
const (
	// ShardedListAndWatchMinor: the server-side shard selector (KEP-5866, alpha gate).
	ShardedListAndWatchMinor = 36
	// MutatingAdmissionPolicyV1Minor: admissionregistration.k8s.io/v1 MutatingAdmissionPolicy.
	MutatingAdmissionPolicyV1Minor = 36
)

// skipper is the part of testing.TB RequireMinor uses.
type skipper interface {
	Helper()
	Skipf(format string, args ...any)
}

// RequireMinor skips the test, naming the version and what it lacks, when
// the local control plane is older than minor.
func RequireMinor(t skipper, minor int, feature string) {
	t.Helper()
	if KubernetesMinor < minor {
		t.Skipf("Kubernetes %s has no %s (from 1.%d)", KubernetesVersion, feature, minor)
	}
}

// RequireMutatingAdmissionPolicy skips a test of atCreation's admission
// policies on a server that does not serve them.
func RequireMutatingAdmissionPolicy(t skipper) {
	t.Helper()
	RequireMinor(t, MutatingAdmissionPolicyV1Minor, "MutatingAdmissionPolicy in admissionregistration.k8s.io/v1")
}

// RequireShardedListAndWatch skips a test of the server-side shard filter
// on a server without it.
func RequireShardedListAndWatch(t skipper) {
	t.Helper()
	RequireMinor(t, ShardedListAndWatchMinor, "ShardedListAndWatch feature gate (server-side shard selector)")
}

// ServesMutatingAdmissionPolicy reports whether the local control plane
// serves MutatingAdmissionPolicy (admissionregistration.k8s.io/v1).
func ServesMutatingAdmissionPolicy() bool { return KubernetesMinor >= MutatingAdmissionPolicyV1Minor }

// WithoutMutatingAdmissionPolicy are the kube-apiserver flags that make a
// server that does not serve MutatingAdmissionPolicy: on a version that
// serves it, the resources and the admission plugin turned off; on an older
// one only the plugin (its v1 resources do not exist to turn off).
func WithoutMutatingAdmissionPolicy() map[string]string {
	args := map[string]string{"disable-admission-plugins": "ServiceAccount,MutatingAdmissionPolicy"} // ServiceAccount: as envtest has it
	if ServesMutatingAdmissionPolicy() {
		args["runtime-config"] = "admissionregistration.k8s.io/v1/mutatingadmissionpolicies=false,admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings=false"
	}
	return args
}

// WithoutShardedListAndWatch are the kube-apiserver flags of a server that
// does not filter by shard: the gate off where it exists; nothing before
// 1.36, where an unknown gate would stop kube-apiserver from starting.
func WithoutShardedListAndWatch() map[string]string {
	if KubernetesMinor < ShardedListAndWatchMinor {
		return nil
	}
	return map[string]string{"feature-gates": "ShardedListAndWatch=false"}
}
