package controlplane

import (
	"context"
	"io"
	"path/filepath"
)

// KindVersion is the kind CLI the workshop builds (make kind, the bench's
// --kind), from the module proxy.
const KindVersion = "v0.33.0"

// GoTool is a Go program the workshop builds from the module proxy and caches
// by version, like the control plane: kind, and the programs a kind node image
// holds.
type GoTool struct {
	// Name is the binary's file name in the cache.
	Name string
	// Module and Version are the module the program is in and its version: a
	// tag, or a commit for a module that is not tagged.
	Module, Version string
	// Package is the program's main package.
	Package string
	// Ldflags are passed to go build (a version stamped in, say).
	Ldflags string
	// Static builds without cgo, for an image with no C library.
	Static bool
	// VersionArgs make the program print its version, which must contain
	// VersionWant; without them a cached copy is known by the stamp written
	// next to it after its build.
	VersionArgs []string
	VersionWant string
}

// EnsureGoTool returns the path of t's binary in <cache>/tools/<dirName>,
// building it the first time (under a lock, so concurrent callers build once).
func EnsureGoTool(ctx context.Context, log io.Writer, dirName string, t GoTool) (string, error) {
	want := t.VersionWant
	if len(t.VersionArgs) == 0 {
		want = t.Module + "@" + t.Version
	}
	a := artifact{
		name: t.Name, pkg: t.Package, ldflags: t.Ldflags, version: t.Version,
		module:      toolModule(filepath.Base(dirName), t.Module, t.Version),
		versionArgs: t.VersionArgs, versionWant: want,
	}
	if t.Static {
		a.env = []string{"CGO_ENABLED=0"}
	}
	return ensureTool(ctx, dirName, a, log)
}

// EnsureKind returns the path of the cached kind CLI, building it the first
// time (under a minute) into <cache>/tools/kind-<version>.
func EnsureKind(ctx context.Context, log io.Writer) (string, error) {
	return EnsureGoTool(ctx, log, "kind-"+KindVersion, GoTool{
		Name: "kind", Module: "sigs.k8s.io/kind", Version: KindVersion, Package: "sigs.k8s.io/kind",
		VersionArgs: []string{"version"}, VersionWant: "kind " + KindVersion,
	})
}

// EnsureKubeadm returns the path of kubeadm of KubernetesVersion, next to the
// control plane's binaries, building it the first time: a kind node image
// holds it, and kind runs it to set the node up.
func EnsureKubeadm(ctx context.Context, log io.Writer) (string, error) {
	a := kubernetesCommand("kubeadm")
	a.versionArgs, a.versionWant = []string{"version", "-o", "short"}, KubernetesVersion
	dir, err := ensureInCache(ctx, log, a)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, a.name), nil
}
