package controlplane

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/metawatch/metawatch/pkg/testing/loopback"
)

// controllerManagerControllers are the controllers StartControllerManager
// runs: those that make pods (and ReplicaSets, Jobs) out of workloads, with
// the ownerReferences a cluster's have. Their canonical names (1.28+); the
// short ones ("deployment") are aliases.
var controllerManagerControllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller",
	// Makes no pod here: there are no nodes to put them on.
	"daemonset-controller",
	"job-controller", "cronjob-controller",
	// Deleting a Deployment or a Job deletes what it owns, as in a cluster.
	"garbage-collector-controller",
}

// controllerManagerReadyTimeout bounds the start: the process, its informers'
// first lists, the controllers built. Seconds, but the machine may be busy.
const controllerManagerReadyTimeout = 2 * time.Minute

// StartControllerManager runs kube-controller-manager (KubernetesVersion,
// built once and cached next to the node binaries, see
// EnsureControllerManager) against cp until t ends, so the test sees what a
// cluster's controllers make: Deployment → ReplicaSet → Pods, CronJob → Job
// → Pods, StatefulSet → Pods, each with a controller ownerReference. No
// scheduler or kubelet runs: the pods stay Pending, which is all a metadata
// test needs. It returns once every controller is built (its /healthz lists
// them); the test still waits for what they make. The log is printed if t fails.
//
// One at a time per control plane: two managers without leader election
// would both act on every object. Against an existing cluster
// (USE_EXISTING_CLUSTER) it starts nothing, the cluster's own runs.
func (cp *ControlPlane) StartControllerManager(t testing.TB) {
	t.Helper()
	SkipIfShort(t)
	if cp.existing {
		t.Log("USE_EXISTING_CLUSTER: the cluster's own kube-controller-manager runs its controllers; starting none")
		return
	}
	binary, err := EnsureControllerManager(t.Context(), os.Stderr)
	if err != nil {
		t.Fatalf("cannot build kube-controller-manager %s, which the test runs beside its control plane: %v", KubernetesVersion, err)
	}
	if !cp.controllerManager.CompareAndSwap(false, true) {
		t.Fatal("a kube-controller-manager already runs on this control plane (another test's): tests that start one must not run in parallel")
	}
	t.Cleanup(func() { cp.controllerManager.Store(false) })

	dir := t.TempDir()
	kubeconfig, err := cp.controllerManagerKubeconfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	port, err := loopback.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := startControllerManager(binary, filepath.Join(dir, "kube-controller-manager.log"), controllerManagerArgs(kubeconfig, port))
	if err != nil {
		t.Fatal(err)
	}
	// A manager that ends while the test runs fails it: the test was counting
	// on its controllers. The cleanup waits for this watch, so it never
	// reports after the test has ended.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		<-p.exited
		if !p.stopping.Load() {
			t.Errorf("kube-controller-manager exited while the test ran: %v", p.err)
		}
	}()
	t.Cleanup(func() {
		p.stop()
		<-watched
		if t.Failed() {
			t.Logf("kube-controller-manager's log:\n%s", p.logTail())
		}
	})
	if err := p.waitReady(port, controllerManagerReadyTimeout); err != nil {
		t.Fatalf("kube-controller-manager did not start: %v", err)
	}
}

// controllerManagerArgs are kept to what the controllers above need against a
// test control plane: no node IPAM (--cluster-cidr), no CSR signing
// (--cluster-signing-*), no token controller (--service-account-private-key-file)
// and no root CA publisher (--root-ca-file), as none of them runs.
func controllerManagerArgs(kubeconfig string, port int) []string {
	return []string{
		// The API server, as a user of the manager's own (see controllerManagerKubeconfig).
		"--kubeconfig=" + kubeconfig,
		// One manager per control plane (StartControllerManager sees to that):
		// nothing to elect, no Lease to wait for before the controllers start.
		"--leader-elect=false",
		"--controllers=" + strings.Join(controllerManagerControllers, ","),
		// Every controller acts as the manager's user (its default, said here
		// because it matters): with true, each would get a ServiceAccount in
		// kube-system and a token for it, one more thing to go wrong in a test.
		"--use-service-account-credentials=false",
		// Its HTTPS port, on loopback and free (the default 10257 would collide
		// between test binaries): StartControllerManager reads /healthz there.
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// Who may read that port is asked of the test control plane; without
		// these the manager would use a CI pod's in-cluster config, another
		// cluster's. /healthz is always allowed, to anyone.
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		// No client-CA lookup in kube-system: only the anonymous /healthz is asked for.
		"--authentication-skip-lookup",
	}
}

// controllerManagerKubeconfig writes a kubeconfig for a user of the manager's
// own, so its requests stand apart from the tests' admin in the API server's
// view. It is in system:masters: every controller acts as it, and RBAC's
// bootstrap role for system:kube-controller-manager grants only what the
// manager itself does, the controllers' rights being their ServiceAccounts'.
func (cp *ControlPlane) controllerManagerKubeconfig(dir string) (string, error) {
	user, err := cp.env.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("provisioning kube-controller-manager's user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("kube-controller-manager's kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

type managerProcess struct {
	cmd      *exec.Cmd
	logPath  string
	exited   chan struct{}
	err      error // cmd.Wait's, once exited is closed
	stopping atomic.Bool
}

func startControllerManager(binary, logPath string, args []string) (*managerProcess, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// It goes when the test binary does, however that ends (a go test
	// -timeout panic runs no cleanup).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	p := &managerProcess{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitReady polls /healthz?verbose until it passes and lists every
// controller: the manager adds their checks once all are built, just before
// it starts the informers and runs them (1.36's checks are pings; none waits
// for a sync). Whatever the controllers then do, the test waits for.
func (p *managerProcess) waitReady(port int, timeout time.Duration) error {
	// The manager serves a self-signed certificate it made at start, on loopback.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz?verbose", port)
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("it exited: %w", p.err)
		default:
		}
		ok, said := healthy(client, url)
		if ok {
			return nil
		}
		if said != "" {
			last = said
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s; its /healthz: %s", timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func healthy(client *http.Client, url string) (ok bool, said string) {
	resp, err := client.Get(url)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("%s\n%s", resp.Status, body)
	}
	for _, c := range controllerManagerControllers {
		if !strings.Contains(string(body), "[+]"+c+" ok") {
			return false, fmt.Sprintf("%s not listed yet:\n%s", c, body)
		}
	}
	return true, ""
}

// stop sends SIGTERM, and SIGKILL after 10 s if that did not end it (its
// graceful shutdown on SIGTERM needs a feature gate, alpha in 1.36, so there
// is nothing worth waiting longer for).
func (p *managerProcess) stop() {
	p.stopping.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// logTail is the end of the manager's log: its start, flags and failures
// come first, but a long test's log can be long.
func (p *managerProcess) logTail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	return tail(string(data), 64<<10)
}
