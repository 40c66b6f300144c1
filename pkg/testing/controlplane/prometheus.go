package controlplane

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PrometheusPackage is the Debian package of Prometheus and promtool the
// chart's alert tests run.
const PrometheusPackage = "prometheus"

// Prometheus are the paths of the cached prometheus and promtool.
type Prometheus struct {
	Server, Promtool, Version string
}

// EnsurePrometheus returns Debian's prometheus and promtool, downloaded
// (apt-get download, no install) and unpacked the first time into
// <cache>/tools/prometheus-<version>. It needs apt-get and dpkg-deb; where
// they are missing, its error says so, for a test to skip with.
func EnsurePrometheus(ctx context.Context, log io.Writer) (Prometheus, error) {
	cpDir, err := CacheDir()
	if err != nil {
		return Prometheus{}, err
	}
	tools := filepath.Join(filepath.Dir(filepath.Dir(cpDir)), "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return Prometheus{}, err
	}
	unlock, err := LockDir(ctx, nil, tools) // test packages run in parallel
	if err != nil {
		return Prometheus{}, err
	}
	defer unlock()
	if p, ok := cachedPrometheus(tools); ok {
		return p, nil
	}
	for _, bin := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(bin); err != nil {
			return Prometheus{}, fmt.Errorf("no %s on this machine to fetch Debian's %s package: %w", bin, PrometheusPackage, err)
		}
	}
	work, err := os.MkdirTemp("", "metawatch-prometheus-")
	if err != nil {
		return Prometheus{}, err
	}
	defer func() { _ = os.RemoveAll(work) }()
	fmt.Fprintf(log, "fetching Debian's %s package (once; cached in %s)\n", PrometheusPackage, tools)
	if err := download(ctx, work); err != nil {
		return Prometheus{}, err
	}
	debs, _ := filepath.Glob(filepath.Join(work, PrometheusPackage+"_*.deb"))
	if len(debs) != 1 {
		return Prometheus{}, fmt.Errorf("apt-get download %s left %d packages in %s", PrometheusPackage, len(debs), work)
	}
	version, err := output(ctx, "dpkg-deb", "-f", debs[0], "Version")
	if err != nil {
		return Prometheus{}, err
	}
	if _, err := output(ctx, "dpkg-deb", "-x", debs[0], filepath.Join(work, "root")); err != nil {
		return Prometheus{}, err
	}
	dir := filepath.Join(tools, "prometheus-"+strings.ReplaceAll(version, "+", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Prometheus{}, err
	}
	for _, bin := range []string{"prometheus", "promtool"} {
		if err := os.Rename(filepath.Join(work, "root", "usr", "bin", bin), filepath.Join(dir, bin)); err != nil {
			return Prometheus{}, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte(version), 0o644); err != nil {
		return Prometheus{}, err
	}
	p, _ := cachedPrometheus(tools)
	return p, nil
}

// download fetches the package into dir, refreshing apt's lists once if
// they lack it (a fresh container has none).
func download(ctx context.Context, dir string) error {
	get := func() error {
		cmd := exec.CommandContext(ctx, "apt-get", "download", PrometheusPackage)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get download %s: %w\n%s", PrometheusPackage, err, out)
		}
		return nil
	}
	if err := get(); err == nil {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "apt-get", "update").CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update (to find %s): %w\n%s", PrometheusPackage, err, out)
	}
	return get()
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func cachedPrometheus(tools string) (Prometheus, bool) {
	dirs, _ := filepath.Glob(filepath.Join(tools, "prometheus-*", "VERSION"))
	for _, v := range dirs {
		dir := filepath.Dir(v)
		version, err := os.ReadFile(v)
		if err != nil {
			continue
		}
		p := Prometheus{Server: filepath.Join(dir, "prometheus"), Promtool: filepath.Join(dir, "promtool"), Version: string(version)}
		if exec.Command(p.Promtool, "--version").Run() == nil {
			return p, true
		}
	}
	return Prometheus{}, false
}
