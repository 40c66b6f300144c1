package main_test

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// SIGTERM while writes are in transit (held 1.5s by a loaded load balancer,
// which sends them on even if the client gives up): metawatch exits 0 within
// --graceful-shutdown-timeout, and releases its Lease only after every write
// it sent has reached the API server and been answered. With a budget too
// short for that, it leaves the Lease to expire instead of releasing it.
func TestShutdownStopsWritesBeforeReleasingTheLease(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	for _, tc := range []struct {
		name        string
		timeout     time.Duration
		wantRelease bool
	}{
		{name: "budget-ok", timeout: 8 * time.Second, wantRelease: true},
		{name: "budget-short", timeout: time.Second, wantRelease: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "shutdown-" + tc.name
			testkit.Namespace(t, c, ns, nil)
			for i := range 30 {
				testkit.Pod(t, c, ns, fmt.Sprintf("p-%d", i), nil)
			}
			applySelectors(t, c, ns, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: %s, kinds: [Pod], setLabels: {tier: gold}}\n", ns, ns))
			proxy := testkit.NewProxy(t, cp.Config)
			proxy.SetHold(func(r *http.Request) time.Duration {
				if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/pods/") {
					return 1500 * time.Millisecond
				}
				return 0
			})
			args := append([]string{"--kubeconfig", proxy.Kubeconfig, "--config-map", ns + "/selectors", "--leader-elect", "--leader-election-namespace", ns,
				"--graceful-shutdown-timeout", tc.timeout.String(), "--health-probe-bind-address", "0", "--metrics-bind-address", "0"}, leaseFlags...)
			cmd, stderr := start(t, args...)
			testkit.WaitFor(t, "metawatch to send a pod write", testkit.Timeout, func() bool {
				if strings.Contains(stderr.String(), "error") && len(patches(proxy.Exchanges())) == 0 {
					t.Log(stderr.String())
				}
				return len(patches(proxy.Exchanges())) > 0
			})
			sigterm := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			// The budget itself shows in the Lease: released once every write
			// was answered, left to expire when the budget ended first. The
			// exit is only bounded here, for a shutdown that hangs: on a loaded
			// machine the process may take seconds past its budget to end.
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("metawatch exited with %v after SIGTERM, want 0:\n%s", err, stderr.String())
				}
			case <-time.After(tc.timeout + testkit.Timeout):
				t.Fatalf("metawatch did not exit within %s of SIGTERM (--graceful-shutdown-timeout=%s):\n%s", tc.timeout+testkit.Timeout, tc.timeout, stderr.String())
			}
			t.Logf("--graceful-shutdown-timeout=%s: exited %s after SIGTERM", tc.timeout, time.Since(sigterm).Round(10*time.Millisecond))
			// The writes the proxy still holds reach the API server, even those
			// whose client gave up on them.
			testkit.WaitFor(t, "every write held by the proxy to be answered", testkit.Timeout, func() bool {
				for _, p := range patches(proxy.Exchanges()) {
					if p.Answered.IsZero() {
						return false
					}
				}
				return true
			})
			exchanges := proxy.Exchanges()
			release, released := leaseRelease(t, ns)
			if released != tc.wantRelease {
				t.Errorf("Lease released: %v, want %v", released, tc.wantRelease)
			}
			for _, p := range patches(exchanges) {
				if released && (p.Sent.IsZero() || p.Sent.After(release)) {
					t.Errorf("a write to %s reached the API server at %s, after the Lease was released at %s", p.Path, p.Sent.Format("15:04:05.000"), release.Format("15:04:05.000"))
				}
			}
		})
	}
}

func patches(exchanges []testkit.Exchange) []testkit.Exchange {
	var out []testkit.Exchange
	for _, ex := range exchanges {
		if ex.Method == http.MethodPatch && strings.Contains(ex.Path, "/pods/") {
			out = append(out, ex)
		}
	}
	return out
}

// leaseRelease is when the Lease of ns was released (its holder emptied), if it was.
func leaseRelease(t *testing.T, ns string) (time.Time, bool) {
	t.Helper()
	var lease coordinationv1.Lease
	if err := testkit.Client(t, cp.Config).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "metawatch-leader"}, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		return time.Time{}, false
	}
	return lease.Spec.RenewTime.Time, true
}
