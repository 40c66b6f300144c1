package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

const (
	selectorsNamespace = "metawatch-system"
	probeAddress       = "127.0.0.1:18081"
)

// runLocal starts the local control plane, seeds it, runs metawatch on it in
// the foreground and shows it a label change; everything stops on Ctrl-C.
func runLocal(ctx context.Context, o options) error {
	kubeconfig, err := filepath.Abs(filepath.Join(o.stateDir, "kubeconfig"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o755); err != nil {
		return err
	}
	say("starting a local kube-apiserver %s (building it first if it is not cached)", controlplane.KubernetesVersion)
	cp, err := controlplane.Start(ctx, controlplane.Options{KubeconfigPath: kubeconfig})
	if err != nil {
		return err
	}
	defer stopControlPlane(cp)
	kubectl := kubectlFor(cp)
	if err := seed(ctx, kubectl, o); err != nil {
		return err
	}
	go demonstrateChange(ctx, kubectl)
	args := append([]string{"--kubeconfig", kubeconfig, "--config-map", selectorsNamespace + "/metawatch-selectors",
		"--health-probe-bind-address", probeAddress, "--metrics-bind-address", "127.0.0.1:18080", "--metrics-secure=false", "--zap-encoder", "console"}, o.extraArgs...)
	return runWatcher(ctx, o.metawatchBin, args)
}

func stopControlPlane(cp *controlplane.ControlPlane) {
	say("stopping the local control plane")
	if err := cp.Stop(); err != nil {
		say("stopping the local control plane: %v", err)
	}
}

// kubectl runs the control plane's kubectl with its admin kubeconfig.
type kubectl func(ctx context.Context, args ...string) error

func kubectlFor(cp *controlplane.ControlPlane) kubectl {
	return func(ctx context.Context, args ...string) error {
		cmd := exec.CommandContext(ctx, cp.Binaries.Kubectl, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
		}
		return nil
	}
}

func seed(ctx context.Context, k kubectl, o options) error {
	say("applying %s to namespace %s and the demo objects in %s", o.selectors, selectorsNamespace, o.demo)
	if err := k(ctx, "create", "namespace", selectorsNamespace); err != nil {
		return err
	}
	if err := k(ctx, "apply", "-n", selectorsNamespace, "-f", o.selectors); err != nil {
		return err
	}
	return k(ctx, "apply", "-f", o.demo)
}

// demonstrateChange waits until metawatch is ready, changes a label so the
// first run shows metawatch seeing it, then shows how to try one by hand.
func demonstrateChange(ctx context.Context, k kubectl) {
	if !waitReady(ctx) {
		return
	}
	time.Sleep(3 * time.Second)
	say("changing a label: kubectl -n demo label pod web-1 tier=frontend-v2 --overwrite")
	if err := k(ctx, "-n", "demo", "label", "pod", "web-1", "tier=frontend-v2", "--overwrite"); err != nil {
		say("%v", err)
		return
	}
	kubeconfig, _ := filepath.Abs(filepath.Join("bin", "local", "kubeconfig"))
	kubectl := controlplaneKubectl() + " --kubeconfig " + kubeconfig
	say("try one yourself in another terminal:\n\n    %s -n demo label pod web-2 color=blue --overwrite\n    %s label namespace demo team=checkout --overwrite   # the rule copies it to the pods\n    %s -n %s edit configmap metawatch-selectors          # followed live; a bad edit is rejected\n\nCtrl-C stops metawatch and the control plane.",
		kubectl, kubectl, kubectl, selectorsNamespace)
}

func controlplaneKubectl() string {
	dir, err := controlplane.CacheDir()
	if err != nil {
		return "kubectl"
	}
	return filepath.Join(dir, "kubectl")
}

func waitReady(ctx context.Context) bool {
	for {
		resp, err := http.Get("http://" + probeAddress + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(500 * time.Millisecond):
		}
	}
}
