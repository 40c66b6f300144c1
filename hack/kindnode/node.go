package kindnode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// assembleNode makes the node's root file system in dir: the Debian files of
// rootfsTar, kind's base-image files, the programs of b, kind's manifests and
// every image of the archive imported into the node's containerd.
func assembleNode(ctx context.Context, dir, rootfsTar, kindDir, archive string, b bits, kind kindSource) error {
	if err := untar(ctx, rootfsTar, dir); err != nil {
		return err
	}
	if err := copyKindBaseFiles(filepath.Join(kindDir, "images", "base", "files"), dir); err != nil {
		return err
	}
	if err := adaptToDebian(ctx, dir); err != nil {
		return err
	}
	if err := setUpSystemd(ctx, dir); err != nil {
		return err
	}
	if err := writeKindFiles(dir, kind); err != nil {
		return err
	}
	for target, from := range map[string]string{
		"usr/bin/kubeadm": b.kubeadm, "usr/bin/kubelet": b.kubelet, "usr/bin/kubectl": b.kubectl, "usr/local/bin/crictl": b.crictl,
	} {
		if err := copyFile(from, filepath.Join(dir, target), 0o755); err != nil {
			return err
		}
	}
	return preloadImages(ctx, dir, archive)
}

// writeKindFiles writes what kind reads from a node image: the Kubernetes
// version, and the manifests it installs (nodeManifests).
func writeKindFiles(root string, kind kindSource) error {
	cni, storage := nodeManifests(kind)
	for path, data := range map[string]string{
		"kind/version": controlplane.KubernetesVersion,
		strings.TrimPrefix(kind.cniManifestPath, "/"):     cni,
		strings.TrimPrefix(kind.storageManifestPath, "/"): storage,
	} {
		if err := writeFile(filepath.Join(root, path), []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyKindBaseFiles copies kind's files of a base image (its entrypoint,
// units, containerd and crictl configuration, scripts) into the root file
// system, as kind's base Dockerfile does: scripts executable, the rest not.
func copyKindBaseFiles(from, root string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		mode := os.FileMode(0o644)
		if strings.HasPrefix(rel, "usr/local/bin/") || strings.HasPrefix(rel, "kind/bin/") {
			mode = 0o755
		}
		return copyFile(path, filepath.Join(root, rel), mode)
	})
}

// sandboxImage is the containerd setting of the pod sandbox's image.
var sandboxImage = regexp.MustCompile(`(?m)^(\s*sandbox_image\s*=\s*)"[^"]*"`)

// adaptToDebian puts Debian's containerd and CNI plugins where kind's units
// and configuration look for the ones kind builds, names the sandbox image
// built here in containerd's configuration, and writes the runtime spec kind's
// base image generates at build time.
func adaptToDebian(ctx context.Context, root string) error {
	for _, name := range []string{"containerd", "ctr", "containerd-shim-runc-v2"} {
		if err := os.Symlink("/usr/bin/"+name, filepath.Join(root, "usr/local/bin", name)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	for _, plugin := range []string{"host-local", "loopback", "ptp", "portmap"} {
		if err := copyFile(filepath.Join(root, "usr/lib/cni", plugin), filepath.Join(root, "opt/cni/bin", plugin), 0o755); err != nil {
			return fmt.Errorf("CNI plugin %s (Debian's containernetworking-plugins): %w", plugin, err)
		}
	}
	configPath := filepath.Join(root, "etc/containerd/config.toml")
	config, err := os.ReadFile(configPath)
	if err != nil {
		return err
	}
	if !sandboxImage.Match(config) {
		return fmt.Errorf("kind's containerd configuration has no sandbox_image to set; the recipe in hack/kindnode needs updating")
	}
	config = sandboxImage.ReplaceAll(config, []byte(`${1}"`+onenode.PauseImage+`"`))
	// containerd gives a pod's sandbox a lower OOM score than its own, which
	// takes CAP_SYS_RESOURCE; where root lacks it (as here) runc fails every
	// sandbox. Restricted, the score is never below containerd's own, as kind
	// sets it for rootless nodes.
	config = bytes.ReplaceAll(config, []byte("restrict_oom_score_adj = false"), []byte("restrict_oom_score_adj = true"))
	if err := os.WriteFile(configPath, config, 0o644); err != nil {
		return err
	}
	return writeRuntimeSpec(ctx, root)
}

// writeRuntimeSpec is kind's base image's `ctr oci spec | jq ...`: the
// default runtime spec with kind's createContainer hook and no rlimits, from
// the same containerd version the node runs (this machine's ctr is Debian's).
func writeRuntimeSpec(ctx context.Context, root string) error {
	out, err := exec.CommandContext(ctx, "ctr", "oci", "spec").Output()
	if err != nil {
		return fmt.Errorf("ctr oci spec (Debian's containerd package): %w", err)
	}
	var spec map[string]any
	if err := json.Unmarshal(out, &spec); err != nil {
		return err
	}
	hooks, _ := spec["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	create, _ := hooks["createContainer"].([]any)
	hooks["createContainer"] = append(create, map[string]any{"path": "/kind/bin/mount-product-files.sh"})
	spec["hooks"] = hooks
	if process, ok := spec["process"].(map[string]any); ok {
		delete(process, "rlimits")
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(root, "etc/containerd/cri-base.json"), data, 0o644)
}

// setUpSystemd is kind's base Dockerfile's systemd steps: no unit starts but
// the ones kind enables, journald does not read the kernel's log, and
// /sbin/init is systemd (Debian's systemd-sysv made that link).
func setUpSystemd(ctx context.Context, root string) error {
	for _, pattern := range []string{
		"lib/systemd/system/multi-user.target.wants/*", "etc/systemd/system/*.wants/*", "lib/systemd/system/local-fs.target.wants/*",
		"lib/systemd/system/sockets.target.wants/*udev*", "lib/systemd/system/sockets.target.wants/*initctl*",
		"lib/systemd/system/basic.target.wants/*", "lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
	} {
		matches, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	journald := filepath.Join(root, "etc/systemd/journald.conf")
	if err := appendLine(journald, "ReadKMsg=no"); err != nil {
		return err
	}
	for _, args := range [][]string{{"enable", "kubelet.service", "containerd.service", "undo-mount-hacks.service"}, {"mask", "systemd-binfmt.service"}} {
		if b, err := exec.CommandContext(ctx, "systemctl", append([]string{"--root", root}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl %s in the node's root: %w\n%s", strings.Join(args, " "), err, b)
		}
	}
	return os.MkdirAll(filepath.Join(root, "etc/kubernetes/manifests"), 0o755)
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	_ = os.Remove(to) // a link or a read-only file in its place
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(to, mode)
}
