package controlplane

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// HelmVersion is the helm CLI the chart tests use, built from the module proxy.
const HelmVersion = "v3.19.0"

// KwokVersion is kwok, the bench's simulated nodes (sigs.k8s.io/kwok), built
// from the module proxy.
const KwokVersion = "v0.8.0"

func helmArtifact() artifact {
	return artifact{
		name: "helm", pkg: "helm.sh/helm/v3/cmd/helm",
		module: toolModule("helm-"+HelmVersion, "helm.sh/helm/v3", HelmVersion),
		// Without the Kubernetes version stamped in, helm lint and template assume
		// Kubernetes 1.20 and refuse charts that need a newer one.
		ldflags: "-X helm.sh/helm/v3/internal/version.version=" + HelmVersion +
			" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=36",
		versionArgs: []string{"version", "--short"}, versionWant: HelmVersion,
	}
}

func kwokArtifact() artifact {
	return artifact{
		name: "kwok", pkg: "sigs.k8s.io/kwok/cmd/kwok",
		module: toolModule("kwok-"+KwokVersion, "sigs.k8s.io/kwok", KwokVersion),
		// kwok's version is a constant of its source ("0.8.0"), not stamped in.
		versionArgs: []string{"--version"}, versionWant: KwokVersion[1:],
	}
}

// toolModule is a wrapper module that requires module at version and nothing else.
func toolModule(name, module, version string) wrapperModule {
	return wrapperModule{name: name, goMod: func(context.Context) (string, error) {
		return "module metawatch.local/tools-build\n\ngo 1.26.0\n\nrequire " + module + " " + version + "\n", nil
	}}
}

// EnsureHelm returns the path of the cached helm CLI, building it the first time
// (about two minutes) into <cache>/tools/helm-<version>.
func EnsureHelm(ctx context.Context, log io.Writer) (string, error) {
	return ensureTool(ctx, "helm-"+HelmVersion+"-k8s1.36", helmArtifact(), log)
}

// EnsureKwok returns the path of the cached kwok binary, building it the first
// time (about two minutes) into <cache>/tools/kwok-<version>.
func EnsureKwok(ctx context.Context, log io.Writer) (string, error) {
	return ensureTool(ctx, "kwok-"+KwokVersion, kwokArtifact(), log)
}

// ensureTool builds a (once, under a lock) into <cache>/tools/dirName, next to
// the control plane's directory, and returns its path.
func ensureTool(ctx context.Context, dirName string, a artifact, log io.Writer) (string, error) {
	cpDir, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(filepath.Dir(cpDir)), "tools", dirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	unlock, err := LockDir(ctx, nil, dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := ensure(ctx, dir, a, log); err != nil {
		return "", err
	}
	return filepath.Join(dir, a.name), nil
}
