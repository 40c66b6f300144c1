package testkit

import (
	"os"
	"path/filepath"
	"testing"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// OpenReportsClient is a client of cfg that knows the OpenReports kinds
// besides the built-in ones.
func OpenReportsClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := openreports.Install(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
