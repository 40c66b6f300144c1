package config_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/config"
)

// The write-time checks the controller makes on every write: the kind with
// its group, and the key as the API server compares it.
func TestGuardrailsAllowKinds(t *testing.T) {
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	evilDeployment := schema.GroupKind{Group: "evil.example.com", Kind: "Deployment"}
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	node := schema.GroupKind{Kind: "Node"}
	for name, tc := range map[string]struct {
		writable   []string
		kind       schema.GroupKind
		namespaced bool
		want       bool
	}{
		"a bare built-in name allows the built-in kind":                   {[]string{"Deployment"}, deployment, true, true},
		"a bare built-in name never allows a custom kind of that name":    {[]string{"Deployment"}, evilDeployment, true, false},
		"a name with its group allows that group":                         {[]string{"Deployment.apps"}, deployment, true, true},
		"a name with its group allows no other group":                     {[]string{"Deployment.apps"}, evilDeployment, true, false},
		"a custom kind named with its group is allowed":                   {[]string{"Deployment.evil.example.com"}, evilDeployment, true, true},
		"a custom kind named with its group does not allow the built-in":  {[]string{"Deployment.evil.example.com"}, deployment, true, false},
		"the wildcard allows a namespaced custom kind":                    {[]string{"*"}, widget, true, true},
		"the wildcard does not allow a cluster-scoped kind":               {[]string{"*"}, node, false, false},
		"a cluster-scoped kind named is allowed":                          {[]string{"Pod", "Node"}, node, false, true},
		"a kind not named is refused":                                     {[]string{"Pod"}, deployment, true, false},
		"no writable kinds allow nothing":                                 {nil, schema.GroupKind{Kind: "Pod"}, true, false},
		"a bare core name does not allow a custom kind of that name":      {[]string{"Pod"}, schema.GroupKind{Group: "example.com", Kind: "Pod"}, true, false},
		"a group written in capitals is the same group (DNS is caseless)": {[]string{"Deployment.Evil.Example.com"}, evilDeployment, true, true},
	} {
		t.Run(name, func(t *testing.T) {
			l := config.Guardrails{WritableKinds: tc.writable}
			if got := l.AllowsKind(tc.kind, tc.namespaced); got != tc.want {
				t.Errorf("AllowsKind(%s, namespaced=%v) with --writable-kinds=%v = %v, want %v", tc.kind, tc.namespaced, tc.writable, got, tc.want)
			}
		})
	}
}

func TestGuardrailsRefuseKeys(t *testing.T) {
	defaults := config.DefaultGuardrails()
	for name, tc := range map[string]struct {
		limits  config.Guardrails
		key     string
		optedIn []string
		// want is KeyRefusal's answer; release ReleaseRefusal's.
		want, release string
	}{
		"an ordinary key is allowed":                         {defaults, "example.com/team", nil, "", ""},
		"a protected exact key is refused":                   {defaults, "pod-template-hash", nil, config.RefusedProtected, config.RefusedProtected},
		"a protected key by prefix is refused":               {defaults, "batch.kubernetes.io/job-name", nil, config.RefusedProtected, config.RefusedProtected},
		"the DaemonSet controller's generation is protected": {defaults, "pod-template-generation", nil, config.RefusedProtected, config.RefusedProtected},
		"a protected prefix in capitals is refused": {defaults, "Kubectl.Kubernetes.io/last-applied-configuration", nil,
			config.RefusedProtected, config.RefusedProtected},
		"a protected prefix all in capitals is refused": {defaults, "POD-SECURITY.KUBERNETES.IO/enforce", nil,
			config.RefusedProtected, config.RefusedProtected},
		"a protected exact key in capitals is refused": {defaults, "Pod-Template-Hash", nil, config.RefusedProtected, config.RefusedProtected},
		"a protected key's name in capitals is refused": {guardrailsFromFlags(t, "--protected-keys=example.com/owner"), "example.com/OWNER", nil,
			config.RefusedProtected, config.RefusedProtected},
		"a reserved key not opted in is refused": {guardrailsFromFlags(t, "--protected-keys=", "--allowed-reserved-keys=topology.kubernetes.io/*"),
			"topology.kubernetes.io/zone", nil, config.RefusedReserved, ""},
		"a reserved key opted in and allowed is written": {guardrailsFromFlags(t, "--protected-keys=", "--allowed-reserved-keys=topology.kubernetes.io/*"),
			"topology.kubernetes.io/zone", []string{"topology.kubernetes.io/zone"}, "", ""},
		"a reserved key opted in but not allowed is refused": {guardrailsFromFlags(t, "--protected-keys="),
			"topology.kubernetes.io/zone", []string{"topology.kubernetes.io/zone"}, config.RefusedReserved, config.RefusedReserved},
		"a reserved prefix in capitals is reserved": {guardrailsFromFlags(t, "--protected-keys="),
			"Topology.Kubernetes.IO/zone", []string{"Topology.Kubernetes.IO/zone"}, config.RefusedReserved, config.RefusedReserved},
		"a reserved subdomain in capitals is reserved": {guardrailsFromFlags(t, "--protected-keys="), "EXAMPLE.K8S.IO/x", nil, config.RefusedReserved, config.RefusedReserved},
		"an allowed prefix allows its capitalised spelling": {guardrailsFromFlags(t, "--protected-keys=", "--allowed-reserved-keys=topology.kubernetes.io/*"),
			"TOPOLOGY.kubernetes.io/zone", []string{"TOPOLOGY.kubernetes.io/zone"}, "", ""},
		"an allowed key does not allow another name's capitals": {guardrailsFromFlags(t, "--protected-keys=", "--allowed-reserved-keys=topology.kubernetes.io/zone"),
			"topology.kubernetes.io/ZONE", []string{"topology.kubernetes.io/ZONE"}, config.RefusedReserved, config.RefusedReserved},
		"a protected key stays protected when reserved keys are allowed": {guardrailsFromFlags(t, "--allowed-reserved-keys=*"),
			"pod-security.kubernetes.io/enforce", []string{"pod-security.kubernetes.io/enforce"}, config.RefusedProtected, config.RefusedProtected},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.limits.KeyRefusal(tc.key, tc.optedIn); got != tc.want {
				t.Errorf("KeyRefusal(%q, %v) = %q, want %q", tc.key, tc.optedIn, got, tc.want)
			}
			if got := tc.limits.ReleaseRefusal(tc.key); got != tc.release {
				t.Errorf("ReleaseRefusal(%q) = %q, want %q", tc.key, got, tc.release)
			}
		})
	}
}
