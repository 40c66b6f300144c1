package main

import (
	"archive/tar"
	"bytes"
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
//
// What costs time here is not what is proven. The binary is compiled with
// no flags (those of every other build of make test, so the build cache
// holds its 1,100 packages by now; make image's CGO_ENABLED=0 -trimpath
// would compile them all again, 4-14 minutes on two cores), and stripped
// at link (-s -w, as make image does). make image's static build is only
// listed here (none of its packages may need cgo); make test-node builds it
// and runs it in the image on a real node. The tarball is written by
// hack/image's command, as make image runs it: under -race, packing 75 MB
// takes 30 s instead of 3 (it is one goroutine, nothing for the race
// detector to find). It is checked in full here, every layer digested.
func TestImageIsAValidNonRootOCIImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds metawatch and the image: not under go test -short")
	}
	dir := t.TempDir()
	static := exec.Command("go", "list", "-deps", "-e", "-f", "{{with .Error}}{{.}}\n{{end}}{{range .DepsErrors}}{{.}}\n{{end}}", "../../cmd/metawatch")
	static.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := static.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("metawatch's packages with CGO_ENABLED=0 (make image): %v\n%s", err, out)
	}
	binary := filepath.Join(dir, "metawatch")
	if out, err := exec.Command("go", "build", "-ldflags", "-s -w", "-o", binary, "../../cmd/metawatch").CombinedOutput(); err != nil {
		t.Fatalf("building metawatch: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "image.tar")
	const ref = "ghcr.io/metawatch/metawatch:test"
	if out, err := exec.Command("go", "run", ".", "--binary", binary, "--ref", ref, "--out", out, "--arch", "amd64").CombinedOutput(); err != nil {
		t.Fatalf("go run ./hack/image: %v\n%s", err, out)
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
