package kindnode

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// imageSpec is one image of the node: files (path in the image, no leading
// slash, to the host file that becomes it) on the Debian layer.
type imageSpec struct {
	ref             string
	files           map[string]string
	entrypoint, cmd []string
}

// imagePath is the search path of every image: kubeadm's manifests name
// their commands (etcd, kube-apiserver, ...) without a directory.
const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// writeImages writes every image of specs, each on the Debian layer of
// rootfsTar, into one docker archive at out (the format both `ctr images
// import` and `docker load` read). The Debian layer is the same blob in every
// image, so the node's containerd stores it once.
func writeImages(out, rootfsTar string, specs []imageSpec) error {
	base, err := tarball.LayerFromFile(rootfsTar, tarball.WithCompressedCaching)
	if err != nil {
		return err
	}
	images := map[name.Reference]v1.Image{}
	for _, spec := range specs {
		img, err := buildImage(base, spec)
		if err != nil {
			return fmt.Errorf("image %s: %w", spec.ref, err)
		}
		tag, err := name.NewTag(spec.ref)
		if err != nil {
			return err
		}
		images[tag] = img
	}
	return tarball.MultiRefWriteToFile(out, images)
}

func buildImage(base v1.Layer, spec imageSpec) (v1.Image, error) {
	layers := []v1.Layer{base}
	if len(spec.files) > 0 {
		files, err := filesLayer(spec.files)
		if err != nil {
			return nil, err
		}
		layers = append(layers, files)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config.Env, cf.Config.Entrypoint, cf.Config.Cmd = []string{imagePath}, spec.entrypoint, spec.cmd
	return mutate.ConfigFile(img, cf)
}

// filesLayer is a layer of the files, each executable, in a stable order
// with a fixed time, so the same programs make the same layer.
func filesLayer(files map[string]string) (v1.Layer, error) {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data, err := os.ReadFile(files[p])
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Name: p, Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := w.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	data := b.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}
