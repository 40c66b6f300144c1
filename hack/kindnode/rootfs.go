package kindnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// debianSuite is the Debian release of the node's root file system: the
// machine's own, so the programs built here (against its C library) run in it.
const debianSuite = "bookworm"

// debianPackages are what kind's base image installs (its
// images/base/Dockerfile), with Debian's containerd, runc and CNI plugins in
// place of the ones kind builds.
var debianPackages = []string{
	"systemd", "systemd-sysv", "dbus",
	"containerd", "runc", "containernetworking-plugins",
	"conntrack", "iptables", "nftables", "iproute2", "ethtool", "util-linux", "mount", "kmod",
	"libseccomp2", "pigz", "bash", "ca-certificates", "procps", "e2fsprogs",
	"jq", "curl", // kind's createContainer hook (mount-product-files.sh) runs jq
}

// debianMirror is where debootstrap fetches the packages: $METAWATCH_DEBIAN_MIRROR,
// else the mirror apt on this machine uses.
func debianMirror() string {
	if m := os.Getenv("METAWATCH_DEBIAN_MIRROR"); m != "" {
		return m
	}
	return "http://deb.debian.org/debian"
}

// rootfsRecipe names a root file system by what makes it.
func rootfsRecipe() string {
	sum := sha256.Sum256([]byte(debianSuite + "\n" + debianMirror() + "\n" + strings.Join(debianPackages, ",")))
	return hex.EncodeToString(sum[:])[:12]
}

// ensureRootfs returns the tarball of the node's Debian root file system in
// cacheDir, making it with debootstrap the first time (about a minute and a
// half). /dev is left empty: the container engine makes it.
func ensureRootfs(ctx context.Context, log io.Writer, cacheDir string) (_ string, err error) {
	out := filepath.Join(cacheDir, "rootfs-"+debianSuite+"-"+rootfsRecipe()+".tar")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := EnsurePackages(ctx, log, map[string]string{"debootstrap": "debootstrap"}); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(cacheDir, ".rootfs-")
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, removeTree(dir)) }()
	fmt.Fprintf(log, "kindnode: making a Debian %s root file system with debootstrap from %s (once, about a minute and a half)\n", debianSuite, debianMirror())
	start := time.Now()
	cmd := stoppableCommand(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(debianPackages, ","), debianSuite, dir, debianMirror())
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("debootstrap: %w\n%s", err, tailOf(string(b), 3000))
	}
	// apt's lists and downloaded packages are of no use in an image.
	for _, junk := range []string{"var/cache/apt/archives", "var/lib/apt/lists"} {
		if err := emptyDir(filepath.Join(dir, junk)); err != nil {
			return "", err
		}
	}
	if err := tarDir(ctx, dir, out); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "kindnode: root file system made in %s: %s\n", time.Since(start).Round(time.Second), out)
	return out, nil
}

// tarDir packs dir into out (written under a temporary name, then renamed),
// numeric owners kept, /dev's entries left out.
func tarDir(ctx context.Context, dir, out string) error {
	tmp := out + fmt.Sprintf(".tmp-%d", os.Getpid())
	defer os.Remove(tmp)
	cmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "--xattrs", "--exclude=./dev/*", "-C", dir, "-cf", tmp, ".")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("tar of %s: %w\n%s", dir, err, b)
	}
	return os.Rename(tmp, out)
}

// untar unpacks the tarball into dir.
func untar(ctx context.Context, tarball, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "--xattrs", "-xpf", tarball, "-C", dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("untar of %s: %w\n%s", tarball, err, b)
	}
	return nil
}

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil //nolint:nilerr // nothing to empty
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
