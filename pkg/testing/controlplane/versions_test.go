package controlplane

import (
	"strings"
	"testing"
)

// The version switch derives everything the build and the start need from the
// one variable, and refuses what it cannot build or start, naming the variable.
func TestVersionSelection(t *testing.T) {
	for name, c := range map[string]struct {
		env, version, staging, gates, errHas string
		minor                                int
	}{
		"unset is the default":                 {env: "", version: DefaultKubernetesVersion, staging: "v0.37.2", minor: 37, gates: "ShardedListAndWatch=true"},
		"1.34 has no sharded gate":             {env: "v1.34.4", version: "v1.34.4", staging: "v0.34.4", minor: 34},
		"1.35 has no sharded gate":             {env: "v1.35.4", version: "v1.35.4", staging: "v0.35.4", minor: 35},
		"1.37 keeps the sharded gate":          {env: "v1.37.2", version: "v1.37.2", staging: "v0.37.2", minor: 37, gates: "ShardedListAndWatch=true"},
		"a version without its v is refused":   {env: "1.35.4", errHas: "expected v1.<minor>.<patch>"},
		"a minor alone is refused":             {env: "v1.35", errHas: "expected v1.<minor>.<patch>"},
		"a version older than 1.34 is refused": {env: "v1.33.9", errHas: "older than the oldest minor"},
	} {
		t.Run(name, func(t *testing.T) {
			r := selectVersion(c.env)
			if c.errHas != "" {
				if r.err == nil || !strings.Contains(r.err.Error(), c.errHas) || !strings.Contains(r.err.Error(), VersionEnv) {
					t.Fatalf("error %v, want one naming %s and saying %q", r.err, VersionEnv, c.errHas)
				}
				return
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.version != c.version || r.staging != c.staging || r.minor != c.minor || featureGatesOf(r.minor) != c.gates {
				t.Errorf("got %s %s minor %d gates %q, want %s %s minor %d gates %q",
					r.version, r.staging, r.minor, featureGatesOf(r.minor), c.version, c.staging, c.minor, c.gates)
			}
		})
	}
}
