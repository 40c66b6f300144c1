package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the image's non-root user (distroless's "nonroot").
const User = "65532:65532"

type options struct {
	binary, ref, out, arch string
}

func build(o options) error {
	img, err := image(o)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "metawatch-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := path.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.ref})); err != nil {
		return err
	}
	return tarDir(dir, o.out)
}

// image is the binary as /metawatch, plus /etc/passwd naming the non-root user, on an empty base.
func image(o options) (v1.Image, error) {
	binary, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary (run `make image`, which builds it): %w", err)
	}
	layerTar, err := layerFiles(map[string]file{
		"metawatch":  {data: binary, mode: 0o755},
		"etc/passwd": {data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), mode: 0o644},
		"etc/group":  {data: []byte("root:x:0:\nnonroot:x:65532:\n"), mode: 0o644},
	})
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile() // keeps the layer's diff ID in rootfs
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = o.arch, "linux", v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config = v1.Config{
		Entrypoint: []string{"/metawatch"}, User: User, WorkingDir: "/",
		Labels: map[string]string{"org.opencontainers.image.source": "https://github.com/metawatch/metawatch", "org.opencontainers.image.title": "metawatch"},
	}
	return mutate.ConfigFile(img, cfg)
}

type file struct {
	data []byte
	mode int64
}

// layerFiles is a reproducible tar of files (fixed times, root-owned).
func layerFiles(files map[string]file) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, name := range []string{"etc/group", "etc/passwd", "metawatch"} {
		f := files[name]
		hdr := &tar.Header{Name: name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if err := w.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), w.Close()
}

// tarDir writes the files under dir into a tarball at out (via a temp name, then a rename).
func tarDir(dir, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	w := tar.NewWriter(f)
	if err := w.AddFS(os.DirFS(dir)); err != nil {
		f.Close()
		return err
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
