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

func helmArtifact() artifact {
	return artifact{
		name: "helm", pkg: "helm.sh/helm/v3/cmd/helm",
		module: wrapperModule{name: "helm-" + HelmVersion, goMod: func(context.Context) (string, error) {
			return "module metawatch.local/tools-build\n\ngo 1.26.0\n\nrequire helm.sh/helm/v3 " + HelmVersion + "\n", nil
		}},
		// Without the Kubernetes version stamped in, helm lint and template assume
		// Kubernetes 1.20 and refuse charts that need a newer one.
		ldflags: "-X helm.sh/helm/v3/internal/version.version=" + HelmVersion +
			" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=36",
		versionArgs: []string{"version", "--short"}, versionWant: HelmVersion,
	}
}

// EnsureHelm returns the path of the cached helm CLI, building it the first time
// (about two minutes) into <cache>/tools/helm-<version>.
func EnsureHelm(ctx context.Context, log io.Writer) (string, error) {
	cpDir, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(filepath.Dir(cpDir)), "tools", "helm-"+HelmVersion+"-k8s1.36")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	a := helmArtifact()
	if err := ensure(ctx, dir, a, log); err != nil {
		return "", err
	}
	return filepath.Join(dir, a.name), nil
}
