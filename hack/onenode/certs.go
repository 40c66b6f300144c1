package onenode

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's certificates and keys, all under one directory: a CA,
// the API server's serving certificate, an admin client certificate
// (system:masters, for the components, kubectl and helm) and the
// ServiceAccount signing key pair.
type pki struct{ dir string }

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// generate writes every certificate and key; serving names the API server's addresses.
func (p pki) generate(serving []net.IP) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := template("metawatch-cluster-ca", nil)
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := p.write("ca", caDER, caKey); err != nil {
		return err
	}
	server := template("kube-apiserver", nil)
	server.IPAddresses = serving
	server.DNSNames = []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}
	server.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	if err := p.issue("apiserver", server, ca, caKey); err != nil {
		return err
	}
	admin := template("metawatch-cluster-admin", []string{"system:masters"})
	admin.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if err := p.issue("admin", admin, ca, caKey); err != nil {
		return err
	}
	return p.serviceAccountKeys()
}

func template(cn string, orgs []string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
}

func (p pki) issue(name string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("issuing %s: %w", name, err)
	}
	return p.write(name, der, key)
}

func (p pki) write(name string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.path(name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(p.path(name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// serviceAccountKeys is the RSA pair that signs and verifies ServiceAccount tokens.
func (p pki) serviceAccountKeys() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.path("sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(p.path("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// kubeconfig is an admin kubeconfig for the API server at server.
func (p pki) kubeconfig(server string) ([]byte, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(p.path(name))
		return string(b), err
	}
	ca, err := read("ca.crt")
	if err != nil {
		return nil, err
	}
	crt, err := read("admin.crt")
	if err != nil {
		return nil, err
	}
	key, err := read("admin.key")
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: metawatch-cluster
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: metawatch-cluster
  context: {cluster: metawatch-cluster, user: admin}
current-context: metawatch-cluster
`, server, encodeBase64(ca), encodeBase64(crt), encodeBase64(key)), nil
}
