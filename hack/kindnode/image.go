package kindnode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// recipeVersion changes whenever the way a node image is assembled changes,
// so that a cached image of the old recipe is rebuilt.
const recipeVersion = "3"

// recipeLabel is the image label that names the recipe an image was made by.
const recipeLabel = "dev.metawatch.kind-node.recipe"

// Image is the node image's reference in the container engine.
func Image() string { return "metawatch.local/kind-node:" + controlplane.KubernetesVersion }

func recipe() string {
	sum := sha256.Sum256([]byte(strings.Join([]string{recipeVersion, controlplane.KubernetesVersion, controlplane.KindVersion,
		rootfsRecipe(), crictlVersion, localPathProvisionerVersion}, "\n")))
	return hex.EncodeToString(sum[:])[:12]
}

// CacheDir is where the node image's tarball and root file system are
// cached: <cache>/kind, next to the control plane's binaries.
func CacheDir() (string, error) {
	cp, err := controlplane.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(filepath.Dir(cp)), "kind"), nil
}

// EnsureImage makes the node image present in the running container engine
// and returns its reference: the engine's copy if it is of this recipe, else
// the cached tarball imported, else built (the first time: minutes, most of
// them compiling; progress goes to log).
func EnsureImage(ctx context.Context, log io.Writer) (string, error) {
	ref, want := Image(), recipe()
	switch imageRecipe(ctx, ref) {
	case want:
		return ref, nil
	case "":
	default: // an image of an older recipe: removed, not left untagged by the import
		if b, err := exec.CommandContext(ctx, "docker", "image", "rm", ref).CombinedOutput(); err != nil {
			return "", fmt.Errorf("removing the node image of an older recipe: %w\n%s", err, b)
		}
	}
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tarball := filepath.Join(dir, fmt.Sprintf("node-%s-%s.tar", controlplane.KubernetesVersion, want))
	if err := ensureNodeTarball(ctx, log, dir, tarball); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "kindnode: importing %s into the container engine as %s\n", tarball, ref)
	imp := exec.CommandContext(ctx, "docker", "import",
		"--change", `ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]`,
		"--change", "ENV container=docker",
		"--change", "LABEL "+recipeLabel+"="+want,
		tarball, ref)
	if b, err := imp.CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker import %s: %w\n%s", tarball, err, b)
	}
	return ref, nil
}

// imageRecipe is the recipe label of ref in the container engine, "" if it is not there.
func imageRecipe(ctx context.Context, ref string) string {
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{json .Config.Labels}}", ref).Output()
	if err != nil {
		return ""
	}
	var labels map[string]string
	_ = json.Unmarshal(bytes.TrimSpace(out), &labels)
	return labels[recipeLabel]
}

// ensureNodeTarball builds the node's tarball out unless it is cached: under
// the build lock, after removing what a stopped build left, and with the
// tarballs of older recipes removed once it is made.
func ensureNodeTarball(ctx context.Context, log io.Writer, cacheDir, out string) error {
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	// Two builds at once would double minutes of compiling, and what a
	// killed build left is removed only under the lock.
	release, err := controlplane.LockDir(ctx, log, cacheDir)
	if err != nil {
		return err
	}
	defer release()
	if _, err := os.Stat(out); err == nil {
		return nil // built by the process that held the lock
	}
	if err := removeLeftovers(log, cacheDir); err != nil {
		return err
	}
	if err := buildNodeTarball(ctx, log, cacheDir, out); err != nil {
		return err
	}
	removeStale(cacheDir, filepath.Base(out), "rootfs-"+debianSuite+"-"+rootfsRecipe()+".tar")
	return nil
}

// buildNodeTarball builds every part of the node and packs its root file
// system into out.
func buildNodeTarball(ctx context.Context, log io.Writer, cacheDir, out string) (err error) {
	start := time.Now()
	fmt.Fprintf(log, "kindnode: building the kind node image of Kubernetes %s (once; later runs reuse %s)\n", controlplane.KubernetesVersion, out)
	// The host's tools the assembly runs (docker.io brings containerd; Debian's systemctl works on a root file system without systemd running).
	if err := EnsurePackages(ctx, log, map[string]string{"containerd": "containerd", "ctr": "containerd", "systemctl": "systemd"}); err != nil {
		return err
	}
	kindModule, err := controlplane.DownloadModule(ctx, "sigs.k8s.io/kind@"+controlplane.KindVersion)
	if err != nil {
		return err
	}
	kindDir := kindModule.Dir
	kind, err := readKindSource(kindDir)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(cacheDir, ".build-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, removeTree(work)) }()
	b, err := buildBits(ctx, log, work)
	if err != nil {
		return err
	}
	rootfs, err := ensureRootfs(ctx, log, cacheDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "kindnode: packing %d images for the node's containerd\n", len(b.images))
	archive := filepath.Join(work, "images.tar")
	if err := writeImages(archive, rootfs, b.images); err != nil {
		return err
	}
	fmt.Fprintf(log, "kindnode: assembling the node's root file system\n")
	root := filepath.Join(work, "node")
	if err := assembleNode(ctx, root, rootfs, kindDir, archive, b, kind); err != nil {
		return err
	}
	if err := tarDir(ctx, root, out); err != nil {
		return err
	}
	fmt.Fprintf(log, "kindnode: node image built in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// removeStale removes the tarballs of older recipes from the cache dir.
func removeStale(dir string, keep ...string) {
	for _, pattern := range []string{"node-*.tar", "rootfs-*.tar"} {
		matches, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, m := range matches {
			if !slices.Contains(keep, filepath.Base(m)) {
				_ = os.Remove(m)
			}
		}
	}
}
