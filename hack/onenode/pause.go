package onenode

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// pauseSource is the sandbox's one process: it holds the pod's namespaces
// and exits on SIGTERM or SIGINT.
const pauseSource = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
`

// buildPauseImage compiles the pause program and packs it as an OCI image
// layout tarball named PauseImage: there is no registry to pull one from.
func buildPauseImage(ctx context.Context, dir string) (string, error) {
	bin, err := BuildPause(ctx, dir)
	if err != nil {
		return "", err
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	archive, err := ociArchive(PauseImage, "/pause", binary)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "pause.tar")
	return out, os.WriteFile(out, archive, 0o644)
}

// BuildPause compiles the sandbox's pause program, static, under dir and
// returns its path: the one-node cluster and a kind node image pack it.
func BuildPause(ctx context.Context, dir string) (string, error) {
	src := filepath.Join(dir, "pause-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module pause\n\ngo 1.26\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(pauseSource), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(src, "pause")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the pause program: %w\n%s", err, out)
	}
	return bin, nil
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ociArchive is an OCI image layout, as a tar, of one layer holding the file
// entrypoint with content binary.
func ociArchive(name, entrypoint string, binary []byte) ([]byte, error) {
	layer, err := tarOf(map[string][]byte{entrypoint[1:]: binary}, 0o755)
	if err != nil {
		return nil, err
	}
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": []string{entrypoint}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest(layer)}},
	})
	blobs := map[string][]byte{}
	add := func(mediaType string, b []byte) descriptor {
		d := digest(b)
		blobs["blobs/sha256/"+d[len("sha256:"):]] = b
		return descriptor{MediaType: mediaType, Digest: d, Size: len(b)}
	}
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": add("application/vnd.oci.image.config.v1+json", config),
		"layers": []descriptor{add("application/vnd.oci.image.layer.v1.tar", layer)},
	})
	m := add("application/vnd.oci.image.manifest.v1+json", manifest)
	m.Annotations = map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []descriptor{m}})
	blobs["index.json"] = index
	blobs["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	return tarOf(blobs, 0o644)
}

func tarOf(files map[string][]byte, mode int64) ([]byte, error) {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for name, data := range files {
		if err := w.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), w.Close()
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
