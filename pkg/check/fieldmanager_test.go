package check_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// check's dry run of an atCreation rule's admission policy applies as the
// --field-manager it is given, the name metawatch writes the policy as: a
// check that dry-ran as the default name checked another writer's apply.
func TestCheckDryRunsPoliciesAsItsFieldManager(t *testing.T) {
	controlplane.SkipIfShort(t)
	if !controlplane.ServesMutatingAdmissionPolicy() {
		t.Skip("the API server does not serve MutatingAdmissionPolicy: check dry-runs no policy")
	}
	managers := &dryRunManagers{}
	kubeconfig := recordingKubeconfig(t, managers)
	const conf = "watches:\n- kind: Pod\nrules:\n- {name: fm, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}\n"
	code, out := runCheck(t, "-f", writeConfig(t, conf), "--kubeconfig", kubeconfig, "--allow-at-creation", "--field-manager", "metawatch-team-a")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	got := managers.seen()
	if len(got) == 0 || slices.ContainsFunc(got, func(m string) bool { return m != "metawatch-team-a" }) {
		t.Errorf("the policy's dry-run applies named field managers %q, want only metawatch-team-a, the --field-manager given", got)
	}
}

// dryRunManagers records the field manager of each dry-run patch.
type dryRunManagers struct {
	mu    sync.Mutex
	names []string
}

func (d *dryRunManagers) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.names)
}

// recordingKubeconfig is a kubeconfig for a proxy, on loopback, to the
// test control plane that records in d the field manager of each dry-run
// patch it forwards.
func recordingKubeconfig(t *testing.T, d *dryRunManagers) string {
	t.Helper()
	target, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); r.Method == http.MethodPatch && q.Get("dryRun") == "All" {
			d.mu.Lock()
			d.names = append(d.names, q.Get("fieldManager"))
			d.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: server.URL}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
