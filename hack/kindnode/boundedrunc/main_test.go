package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/metawatch/metawatch/hack/kindnode/capabilities"
)

func TestSpecFileIsWhatTheCommandReads(t *testing.T) {
	for name, tc := range map[string]struct {
		args        []string
		path        string
		processSpec bool
	}{
		"create reads the bundle's config": {args: []string{"--root", "/r", "create", "--bundle", "/b", "--pid-file", "p", "id"}, path: "/b/config.json"},
		"run with --bundle= too":           {args: []string{"run", "--bundle=/b", "id"}, path: "/b/config.json"},
		"exec reads its process file":      {args: []string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, path: "/tmp/p.json", processSpec: true},
		"start reads nothing":              {args: []string{"start", "id"}},
		"delete reads nothing":             {args: []string{"delete", "--force", "id"}},
	} {
		t.Run(name, func(t *testing.T) {
			path, process := specFile(tc.args)
			if path != tc.path || process != tc.processSpec {
				t.Errorf("specFile(%q) = %q, %v; want %q, %v", tc.args, path, process, tc.path, tc.processSpec)
			}
		})
	}
}

// A capability this process cannot hold leaves every set of a bundle's spec;
// the ones it holds, and the rest of the spec, stay.
func TestBoundLeavesOutOnlyWhatCannotBeHad(t *testing.T) {
	held, err := capabilities.Bounding()
	if err != nil {
		t.Fatal(err)
	}
	bundle := t.TempDir()
	spec := map[string]any{"ociVersion": "1.0.2", "process": map[string]any{"args": []string{"/pause"},
		"capabilities": map[string]any{"bounding": []string{"CAP_CHOWN", "CAP_MADE_UP"}, "effective": []string{"CAP_MADE_UP"}}}}
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := bound([]string{"create", "--bundle", bundle, "id"}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		OCIVersion string `json:"ociVersion"`
		Process    struct {
			Args         []string            `json:"args"`
			Capabilities map[string][]string `json:"capabilities"`
		} `json:"process"`
	}
	data, _ = os.ReadFile(filepath.Join(bundle, "config.json"))
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.Process.Capabilities["bounding"], "CAP_MADE_UP") || len(got.Process.Capabilities["effective"]) != 0 {
		t.Errorf("a capability no process holds stayed: %v", got.Process.Capabilities)
	}
	if held["CAP_CHOWN"] && !slices.Contains(got.Process.Capabilities["bounding"], "CAP_CHOWN") {
		t.Errorf("a held capability was left out: %v", got.Process.Capabilities)
	}
	if got.OCIVersion != "1.0.2" || len(got.Process.Args) != 1 {
		t.Errorf("the rest of the spec changed: %s", data)
	}
}
