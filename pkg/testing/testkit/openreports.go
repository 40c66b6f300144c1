package testkit

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// OpenReportsCRDs is where the chart keeps the OpenReports CRDs, copied
// from the openreports/reports-api module (deploy/helm checks they are its).
const OpenReportsCRDs = "deploy/helm/metawatch/openreports"

// InstallOpenReports installs the OpenReports CRDs (Report, ClusterReport)
// on the API server of cfg, from the chart's copy, and waits until they
// are served. root is the repository's root, relative to the test.
func InstallOpenReports(t testing.TB, cfg *rest.Config, root string) {
	t.Helper()
	dir := filepath.Join(root, OpenReportsCRDs)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		crds = append(crds, crd)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		t.Fatal(err)
	}
}
