package controlplane

import (
	"os"
	"os/exec"
	"path/filepath"
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
		if c.want == "" && len(c.got) == 0 {
			continue // no gate at this version: no flag
		}
		if !slices.Contains(c.got, c.want) {
			t.Errorf("%s: %v, want %q", name, c.got, c.want)
		}
	}
}

// The API server's wrapper adds the environment and passes every argument
// through unchanged, quotes and spaces included.
func TestEnvWrapperAddsTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "it's a binary")
	if err := os.WriteFile(binary, []byte("#!/bin/sh\necho \"$GOMEMLIMIT|$ODD\"\nfor a in \"$@\"; do echo \"[$a]\"; done\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	wrapper, err := writeEnvWrapper(dir, binary, map[string]string{"GOMEMLIMIT": "12GiB", "ODD": `a 'quoted' "value"`})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), wrapper, "--etcd-servers=http://127.0.0.1:2379", "two words", "it's").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "12GiB|a 'quoted' \"value\"\n[--etcd-servers=http://127.0.0.1:2379]\n[two words]\n[it's]\n"
	if string(out) != want {
		t.Errorf("the wrapped binary saw\n%s\nwant\n%s", out, want)
	}
}
