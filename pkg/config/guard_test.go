package config_test

import (
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
)

// The write-time checks the controller makes on every write: the key as the
// API server compares it.
func TestGuardRefusesKeys(t *testing.T) {
	defaults := config.DefaultLimits()
	for name, tc := range map[string]struct {
		limits  config.Limits
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
		"a protected key's name in capitals is refused": {limitsFromFlags(t, "--protected-keys=example.com/owner"), "example.com/OWNER", nil,
			config.RefusedProtected, config.RefusedProtected},
		"a reserved key not opted in is refused": {limitsFromFlags(t, "--protected-keys=", "--allowed-reserved-keys=topology.kubernetes.io/*"),
			"topology.kubernetes.io/zone", nil, config.RefusedReserved, ""},
		"a reserved key opted in and allowed is written": {limitsFromFlags(t, "--protected-keys=", "--allowed-reserved-keys=topology.kubernetes.io/*"),
			"topology.kubernetes.io/zone", []string{"topology.kubernetes.io/zone"}, "", ""},
		"a reserved key opted in but not allowed is refused": {limitsFromFlags(t, "--protected-keys="),
			"topology.kubernetes.io/zone", []string{"topology.kubernetes.io/zone"}, config.RefusedReserved, config.RefusedReserved},
		"a reserved prefix in capitals is reserved": {limitsFromFlags(t, "--protected-keys="),
			"Topology.Kubernetes.IO/zone", []string{"Topology.Kubernetes.IO/zone"}, config.RefusedReserved, config.RefusedReserved},
		"a reserved subdomain in capitals is reserved": {limitsFromFlags(t, "--protected-keys="), "EXAMPLE.K8S.IO/x", nil, config.RefusedReserved, config.RefusedReserved},
		"an allowed prefix allows its capitalised spelling": {limitsFromFlags(t, "--protected-keys=", "--allowed-reserved-keys=topology.kubernetes.io/*"),
			"TOPOLOGY.kubernetes.io/zone", []string{"TOPOLOGY.kubernetes.io/zone"}, "", ""},
		"an allowed key does not allow another name's capitals": {limitsFromFlags(t, "--protected-keys=", "--allowed-reserved-keys=topology.kubernetes.io/zone"),
			"topology.kubernetes.io/ZONE", []string{"topology.kubernetes.io/ZONE"}, config.RefusedReserved, config.RefusedReserved},
		"a protected key stays protected when reserved keys are allowed": {limitsFromFlags(t, "--allowed-reserved-keys=*"),
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
