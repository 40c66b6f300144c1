package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// The tarball `make image` writes loads as a valid OCI image whose entrypoint
// is the metawatch binary and whose user is not root.
func TestImageIsAValidNonRootOCIImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the static binary and the image: not under go test -short")
	}
	dir := t.TempDir()
	binary := filepath.Join(dir, "metawatch")
	compile := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, "../../cmd/metawatch")
	compile.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := compile.CombinedOutput(); err != nil {
		t.Fatalf("building metawatch: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "image.tar")
	const ref = "ghcr.io/metawatch/metawatch:test"
	if err := build(options{binary: binary, ref: ref, out: out, arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	index, err := layout.ImageIndexFromPath(untar(t, out))
	if err != nil {
		t.Fatalf("reading the OCI layout: %v", err)
	}
	manifest, err := index.IndexManifest()
	if err != nil || len(manifest.Manifests) != 1 {
		t.Fatalf("index manifest %+v, %v: want one image", manifest, err)
	}
	if got := manifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != ref {
		t.Errorf("ref.name %q, want %q", got, ref)
	}
	img, err := index.Image(manifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("invalid image: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/metawatch"}) {
		t.Errorf("entrypoint %v, want [/metawatch]", cfg.Config.Entrypoint)
	}
	if uid, _, _ := strings.Cut(cfg.Config.User, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("user %q, want a non-root UID", cfg.Config.User)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
	}
	assertExecutable(t, img, "metawatch")
}

func untar(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	r := tar.NewReader(f)
	for {
		hdr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, hdr.Name)
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// assertExecutable finds name in the image's filesystem with an executable mode.
func assertExecutable(t *testing.T, img v1.Image, name string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	r := tar.NewReader(rc)
	for {
		hdr, err := r.Next()
		if err != nil {
			t.Fatalf("%s is not in the image: %v", name, err)
		}
		if strings.TrimPrefix(hdr.Name, "/") == name {
			if hdr.Mode&0o111 == 0 {
				t.Errorf("%s has mode %o, want executable", name, hdr.Mode)
			}
			return
		}
	}
}
