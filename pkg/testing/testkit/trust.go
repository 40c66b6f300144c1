package testkit

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

// ForeignCA is a certificate authority, as PEM, that signed nothing the API
// server holds: a client trusting only it refuses the server's certificate.
func ForeignCA(t testing.TB) []byte {
	t.Helper()
	chain, _, err := certutil.GenerateSelfSignedCertKey("metawatch-test-foreign-ca", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return chain
}

// KubeconfigTrusting is a copy of the kubeconfig at path whose clusters
// trust only the certificate authority caPEM.
func KubeconfigTrusting(t testing.TB, path string, caPEM []byte) string {
	t.Helper()
	kubeconfig, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range kubeconfig.Clusters {
		cluster.CertificateAuthority, cluster.CertificateAuthorityData = "", caPEM
	}
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, out); err != nil {
		t.Fatal(err)
	}
	return out
}
