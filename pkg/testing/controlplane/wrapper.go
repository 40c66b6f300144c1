package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// wrapperModule is a throwaway Go module that requires the module a binary
// lives in, so `go build <pkg>` can resolve it through the module proxy.
type wrapperModule struct {
	name  string
	goMod func(ctx context.Context) (string, error)
}

func kubernetesModule() wrapperModule {
	return wrapperModule{name: "kubernetes-" + KubernetesVersion, goMod: kubernetesGoMod}
}

func etcdModule() wrapperModule {
	return wrapperModule{name: "etcd-" + EtcdVersion, goMod: func(context.Context) (string, error) {
		return "module metawatch.local/controlplane-build\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 " + EtcdVersion + "\n", nil
	}}
}

// stagingReplace matches "k8s.io/api => ./staging/src/k8s.io/api" in k8s.io/kubernetes's go.mod.
var stagingReplace = regexp.MustCompile(`(?m)^\s*(k8s\.io/[a-z0-9-]+)\s*=>\s*\./staging/`)

// kubernetesGoMod reads k8s.io/kubernetes's own go.mod from the module proxy and
// turns each ./staging replace into the published StagingVersion.
func kubernetesGoMod(ctx context.Context) (string, error) {
	upstream, err := downloadGoMod(ctx, "k8s.io/kubernetes@"+KubernetesVersion)
	if err != nil {
		return "", err
	}
	matches := stagingReplace.FindAllStringSubmatch(upstream, -1)
	if len(matches) == 0 {
		return "", fmt.Errorf("k8s.io/kubernetes@%s go.mod lists no ./staging replaces; the build recipe needs updating", KubernetesVersion)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "module metawatch.local/controlplane-build\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", KubernetesVersion)
	for _, m := range matches {
		fmt.Fprintf(&b, "\t%s => %s %s\n", m[1], m[1], StagingVersion)
	}
	b.WriteString(")\n")
	return b.String(), nil
}

func downloadGoMod(ctx context.Context, modVersion string) (string, error) {
	m, err := DownloadModule(ctx, modVersion)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(m.GoMod)
	return string(data), err
}

// Module is a module version in the module cache: its directory and go.mod.
type Module struct{ Dir, GoMod string }

// DownloadModule fetches modVersion (module@version) through the module
// proxy into the module cache, unless it is there, and says where it is.
func DownloadModule(ctx context.Context, modVersion string) (Module, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", modVersion)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Module{}, fmt.Errorf("go mod download %s: %w: %s", modVersion, err, stderr.String())
	}
	var info struct{ Dir, GoMod, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return Module{}, fmt.Errorf("go mod download %s: %w", modVersion, err)
	}
	if info.Error != "" {
		return Module{}, fmt.Errorf("go mod download %s: %s", modVersion, info.Error)
	}
	return Module{Dir: info.Dir, GoMod: info.GoMod}, nil
}

// prepare writes the wrapper module's go.mod under srcRoot and returns its directory.
func (m wrapperModule) prepare(ctx context.Context, srcRoot string) (string, error) {
	dir := filepath.Join(srcRoot, m.name)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return dir, nil
	}
	content, err := m.goMod(ctx)
	if err != nil {
		return "", fmt.Errorf("preparing %s wrapper module: %w", m.name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, WriteFileAtomic(filepath.Join(dir, "go.mod"), []byte(content), 0o644)
}

// WriteFileAtomic writes to a temporary name in the same directory, syncs
// it, renames it to path and syncs the directory: a reader, even after a
// crash, finds the old file or the new one whole.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		_ = dir.Sync()
		dir.Close()
	}
	return nil
}
