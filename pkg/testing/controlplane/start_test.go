package controlplane

import (
	"slices"
	"testing"
)

// The extra flags reach the processes' command lines, the defaults kept.
func TestExtraArgsReachTheCommandLines(t *testing.T) {
	env := newEnvironment(Binaries{}, Options{
		ExtraAPIServerArgs: map[string]string{"max-requests-inflight": "1000"},
		ExtraEtcdArgs:      map[string]string{"quota-backend-bytes": "8589934592"},
	})
	for name, c := range map[string]struct {
		got  []string
		want string
	}{
		"etcd's quota":               {env.ControlPlane.Etcd.Configure().Get("quota-backend-bytes").Get(nil), "8589934592"},
		"the API server's in-flight": {env.ControlPlane.GetAPIServer().Configure().Get("max-requests-inflight").Get(nil), "1000"},
		"the API server's gates":     {env.ControlPlane.GetAPIServer().Configure().Get("feature-gates").Get(nil), FeatureGates},
	} {
		if !slices.Contains(c.got, c.want) {
			t.Errorf("%s: %v, want %q", name, c.got, c.want)
		}
	}
}
