package helm_test

import (
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// metricsCertDir is where the Deployment mounts the metrics certificate's Secret.
const metricsCertDir = "/etc/metawatch/metrics-tls"

// With a certificate Secret (the user's, or the one cert-manager issues into),
// metawatch serves it and the ServiceMonitor verifies it: the Secret's CA (or
// the one caSecret names), for the metrics Service's .svc name, which the
// Certificate lists; only without one does it skip verification.
func TestServiceMonitorVerifiesTheMetricsCertificate(t *testing.T) {
	controlplane.SkipIfShort(t)
	verified := func(secret, key string) map[string]any {
		return map[string]any{"serverName": "metawatch-metrics.render.svc",
			"ca": map[string]any{"secret": map[string]any{"name": secret, "key": key}}}
	}
	cases := map[string]struct {
		set         string
		secret      string // mounted for --metrics-cert-dir; empty: none
		tlsConfig   map[string]any
		certificate bool
	}{
		"no certificate: not verified": {tlsConfig: map[string]any{"insecureSkipVerify": true}},
		"a Secret of the user's":       {set: "metrics.tls.secretName=metrics-cert", secret: "metrics-cert", tlsConfig: verified("metrics-cert", "ca.crt")},
		"its CA from another Secret": {set: "metrics.tls.secretName=metrics-cert,metrics.serviceMonitor.caSecret.name=corp-ca,metrics.serviceMonitor.caSecret.key=root.pem",
			secret: "metrics-cert", tlsConfig: verified("corp-ca", "root.pem")},
		"cert-manager": {set: "metrics.tls.certManager.enabled=true,metrics.tls.certManager.issuerRef.name=metrics-ca",
			secret: "metawatch-metrics-tls", tlsConfig: verified("metawatch-metrics-tls", "ca.crt"), certificate: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objects := render(t, "metrics.serviceMonitor.enabled=true,"+tc.set)
			endpoint := field[map[string]any](t, object(t, objects, "ServiceMonitor"), "spec", "endpoints", 0)
			if got := endpoint["tlsConfig"]; !reflect.DeepEqual(got, tc.tlsConfig) {
				t.Errorf("the ServiceMonitor's tlsConfig = %v, want %v", got, tc.tlsConfig)
			}
			assertServesSecret(t, object(t, objects, "Deployment"), tc.secret)
			certificate := find(objects, "Certificate")
			if (certificate != nil) != tc.certificate {
				t.Fatalf("a cert-manager Certificate rendered: %v, want %v", certificate != nil, tc.certificate)
			}
			if certificate != nil {
				serverName, _ := tc.tlsConfig["serverName"].(string)
				assertCertificateFor(t, certificate, object(t, objects, "Service"), tc.secret, serverName)
			}
		})
	}
}

// Values that contradict each other stop the rendering, saying which and what to do.
func TestMetricsTLSContradictionsFail(t *testing.T) {
	controlplane.SkipIfShort(t)
	cases := map[string]string{
		"metrics.tls.secretName=a,metrics.tls.certManager.enabled=true,metrics.tls.certManager.issuerRef.name=ca": "metrics.tls.secretName and metrics.tls.certManager.enabled exclude each other",
		"metrics.tls.certManager.enabled=true":                 "metrics.tls.certManager.enabled needs metrics.tls.certManager.issuerRef.name",
		"metrics.tls.secretName=a,metrics.secure=false":        "metrics.tls needs metrics.secure: plain HTTP serves no certificate",
		"metrics.serviceMonitor.caSecret.name=ca":              "metrics.serviceMonitor.caSecret.name needs metrics.tls.secretName or metrics.tls.certManager.enabled",
		"metrics.tls.secretName=a,metrics.tls.certManager.x=1": "additional properties 'x' not allowed",
	}
	for set, want := range cases {
		out, err := tryRun(t, "", helmBin, "template", "metawatch", chart, "--set", set)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("--set %s: %v, want a failure saying %q:\n%s", set, err, want, out)
		}
	}
}

// NOTES say plainly when the ServiceMonitor does not verify the certificate.
func TestNotesWarnOfAnUnverifiedServiceMonitor(t *testing.T) {
	controlplane.SkipIfShort(t)
	const warning = "WARNING: the ServiceMonitor does not verify metawatch's metrics certificate (insecureSkipVerify)"
	applyStubCRDs(t) // a dry run against a cluster maps every kind
	for set, want := range map[string]bool{
		"metrics.serviceMonitor.enabled=true":                                     true,
		"metrics.serviceMonitor.enabled=true,metrics.tls.secretName=metrics-cert": false,
		"metrics.serviceMonitor.enabled=false":                                    false,
	} {
		out := helm(t, "install", "metawatch", chart, "-n", "render", "--dry-run=client", "--set", set)
		_, notes, _ := strings.Cut(out, "NOTES:")
		if strings.Contains(notes, warning) != want {
			t.Errorf("--set %s: NOTES warn of an unverified ServiceMonitor: %v, want %v:\n%s", set, !want, want, notes)
		}
	}
}

// assertServesSecret checks that the Deployment mounts secret read-only and
// passes --metrics-cert-dir, or, for "", neither.
func assertServesSecret(t *testing.T, deployment *unstructured.Unstructured, secret string) {
	t.Helper()
	pod := field[map[string]any](t, deployment, "spec", "template", "spec")
	container := field[map[string]any](t, deployment, "spec", "template", "spec", "containers", 0)
	var mounted string
	if volumes, _ := pod["volumes"].([]any); len(volumes) > 0 {
		mounted, _, _ = unstructured.NestedString(volumes[0].(map[string]any), "secret", "secretName")
	}
	if mounted != secret {
		t.Errorf("the Pod mounts Secret %q, want %q", mounted, secret)
	}
	args, _, _ := unstructured.NestedStringSlice(container, "args")
	if got := slices.Contains(args, "--metrics-cert-dir="+metricsCertDir); got != (secret != "") {
		t.Errorf("--metrics-cert-dir=%s in the args: %v, want %v: %v", metricsCertDir, got, secret != "", args)
	}
	want := []any{map[string]any{"name": "metrics-tls", "mountPath": metricsCertDir, "readOnly": true}}
	if secret == "" {
		want = nil
	}
	if got, _, _ := unstructured.NestedSlice(container, "volumeMounts"); !reflect.DeepEqual(got, want) {
		t.Errorf("the container's volumeMounts = %v, want %v", got, want)
	}
}

// assertCertificateFor checks that a cert-manager Certificate is issued into
// secret for the metrics Service's names, serverName among them.
func assertCertificateFor(t *testing.T, certificate, service *unstructured.Unstructured, secret, serverName string) {
	t.Helper()
	if got, _, _ := unstructured.NestedString(certificate.Object, "spec", "secretName"); got != secret {
		t.Errorf("the Certificate's secretName = %q, want %q", got, secret)
	}
	svc, ns := service.GetName(), "render"
	want := []string{svc, svc + "." + ns, svc + "." + ns + ".svc"}
	if got, _, _ := unstructured.NestedStringSlice(certificate.Object, "spec", "dnsNames"); !slices.Equal(got, want) || !slices.Contains(got, serverName) {
		t.Errorf("the Certificate's dnsNames = %v, want %v, the ServiceMonitor's serverName %q among them", got, want, serverName)
	}
	if got, _, _ := unstructured.NestedStringMap(certificate.Object, "spec", "issuerRef"); got["name"] != "metrics-ca" || got["kind"] != "Issuer" {
		t.Errorf("the Certificate's issuerRef = %v, want the Issuer metrics-ca", got)
	}
}

// render is the chart rendered as release metawatch in namespace render with set.
func render(t *testing.T, set string) []*unstructured.Unstructured {
	t.Helper()
	manifests := helm(t, "template", "metawatch", chart, "-n", "render", "--set", set)
	var objects []*unstructured.Unstructured
	decoder := yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		var obj map[string]any
		if err := decoder.Decode(&obj); errors.Is(err, io.EOF) {
			return objects
		} else if err != nil {
			t.Fatalf("decoding the rendered manifests: %v", err)
		}
		if obj != nil {
			objects = append(objects, &unstructured.Unstructured{Object: obj})
		}
	}
}

// find is the first object of kind, or nil.
func find(objects []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objects {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func object(t *testing.T, objects []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	o := find(objects, kind)
	if o == nil {
		t.Fatalf("no %s rendered", kind)
	}
	return o
}

// field is the value at path in o, where an int steps into a list.
func field[T any](t *testing.T, o *unstructured.Unstructured, path ...any) T {
	t.Helper()
	var v any = o.Object
	for _, step := range path {
		switch s := step.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[s]
		case int:
			l, _ := v.([]any)
			if s >= len(l) {
				t.Fatalf("%s %s: no %v in %v", o.GetKind(), o.GetName(), path, o.Object)
			}
			v = l[s]
		}
	}
	out, ok := v.(T)
	if !ok {
		t.Fatalf("%s %s: %v is %T, want %T", o.GetKind(), o.GetName(), path, v, out)
	}
	return out
}
