package kindnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/metawatch/metawatch/hack/kindnode/capabilities"
)

// CanRun says why kind cannot run on this machine, or nil: it needs root
// (to install and start a container engine, and for kind's privileged node
// containers) and a mounted cgroup file system.
func CanRun() error {
	if os.Geteuid() != 0 {
		return errors.New("kind needs root here: it installs and starts a container engine and runs privileged node containers; run it as root (sudo make kind)")
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return nil // cgroup v2
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		return nil // cgroup v1
	}
	return errors.New("kind needs cgroups: /sys/fs/cgroup has neither cgroup v2 (cgroup.controllers) nor v1 controllers (memory); a node container cannot run without them")
}

// EnsurePackages installs, with apt-get, the Debian package of each command
// of commands (command: package) that is not on PATH, saying so. apt-get
// runs to its end even when ctx ends (in a process group of its own, out of
// reach of the terminal's Ctrl-C): a dpkg stopped half way leaves the
// machine's packages broken. No service of the packages is started by their
// installation (holdServices): make kind starts the engine itself, with its
// own settings.
func EnsurePackages(ctx context.Context, log io.Writer, commands map[string]string) error {
	removeHeldServices(log)
	var missing []string
	for command, pkg := range commands {
		if _, err := exec.LookPath(command); err != nil && !slices.Contains(missing, pkg) {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	if err := ctx.Err(); err != nil {
		return err
	}
	fmt.Fprintf(log, "kindnode: installing Debian's %s with apt-get (not on this machine)\n", strings.Join(missing, ", "))
	release, err := holdServices(log)
	if err != nil {
		return err
	}
	defer release()
	aptGet := func(args ...string) error {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, tailOf(string(b), 2000))
		}
		return nil
	}
	if err := aptGet("update"); err != nil {
		return err
	}
	if err := aptGet(append([]string{"install", "-y", "--no-install-recommends"}, missing...)...); err != nil {
		return err
	}
	return ctx.Err() // installed; a Ctrl-C meanwhile stops make kind now
}

// policyRCPath is Debian's hook that invoke-rc.d and deb-systemd-invoke ask
// before they start a service; exit status 101 means "not now".
var policyRCPath = "/usr/sbin/policy-rc.d" // a variable for the tests

// policyRCMarker is in the policy-rc.d make kind writes, so that one a
// killed make kind left is known for its own and removed.
const policyRCMarker = "Written by make kind while it installs packages"

// holdServices keeps the services of the packages being installed from
// starting (Debian's docker.io starts a dockerd with its defaults, iptables
// rules on), with a policy-rc.d of its own while none of the machine's is
// there; release removes it.
func holdServices(log io.Writer) (release func(), err error) {
	if b, err := os.ReadFile(policyRCPath); err == nil && !strings.Contains(string(b), policyRCMarker) {
		return func() {}, nil // the machine's own says what starts
	}
	script := "#!/bin/sh\n# " + policyRCMarker + ", so that their services do not start.\nexit 101\n"
	if err := os.WriteFile(policyRCPath, []byte(script), 0o755); err != nil {
		return nil, fmt.Errorf("writing %s (so that the packages installed start no service): %w", policyRCPath, err)
	}
	return func() {
		if err := os.Remove(policyRCPath); err != nil {
			fmt.Fprintf(log, "kindnode: could not remove the %s written for the install: %v; remove it by hand\n", policyRCPath, err)
		}
	}, nil
}

// removeHeldServices removes a policy-rc.d of make kind's that a killed make
// kind left, which would keep every service on the machine from starting.
func removeHeldServices(log io.Writer) {
	if b, err := os.ReadFile(policyRCPath); err == nil && strings.Contains(string(b), policyRCMarker) {
		if err := os.Remove(policyRCPath); err == nil {
			fmt.Fprintf(log, "kindnode: removed the %s an earlier make kind left\n", policyRCPath)
		}
	}
}

// Engine is the container engine kind runs on: dockerd, started here when
// none was running (Started), and stopped by Stop only then.
type Engine struct {
	Started bool
	daemon  *exec.Cmd
	exited  chan struct{}
}

// StartEngine installs Debian's docker.io when dockerd or the docker CLI is
// missing, and starts dockerd when `docker info` finds none running; its log
// goes to logDir/dockerd.log. started, if not nil, is given the pid of a
// dockerd started here before it is waited for, for a record a make kind
// killed meanwhile leaves.
func StartEngine(ctx context.Context, log io.Writer, logDir string, started func(pid int) error) (*Engine, error) {
	if err := EnsurePackages(ctx, log, map[string]string{"dockerd": "docker.io", "docker": "docker.io"}); err != nil {
		return nil, err
	}
	if EngineAnswers(ctx) {
		fmt.Fprintf(log, "kindnode: using the container engine already running (docker info answers), with its own settings: "+
			"unlike the dockerd make kind starts, it may have changed this host's iptables rules and forwarding; it is left running\n")
		return &Engine{}, nil
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, "dockerd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := dockerdNetworkArgs()
	if lacking := capabilities.Lacking(); len(lacking) > 0 {
		runtime, err := buildBoundedRunc(ctx, logDir)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "kindnode: root here lacks %s: containers run through %s, which leaves out of their specs what cannot be had\n", strings.Join(lacking, ", "), runtime)
		args = append(args, "--add-runtime", "boundedrunc="+runtime, "--default-runtime", "boundedrunc")
	}
	daemon := exec.Command("dockerd", args...)
	daemon.Stdout, daemon.Stderr = logFile, logFile
	daemon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // not killed with the terminal's Ctrl-C before the clean-up
	if err := daemon.Start(); err != nil {
		return nil, fmt.Errorf("starting dockerd: %w", err)
	}
	e := &Engine{Started: true, daemon: daemon, exited: make(chan struct{})}
	go func() { _ = daemon.Wait(); close(e.exited) }()
	if started != nil {
		if err := started(daemon.Process.Pid); err != nil {
			e.Stop(log)
			return nil, err
		}
	}
	fmt.Fprintf(log, "kindnode: started dockerd (pid %d, log %s); it stops at the end\n", daemon.Process.Pid, logPath)
	if err := e.waitAnswering(ctx, log, logPath); err != nil {
		return nil, err
	}
	return e, nil
}

// waitAnswering waits for the dockerd started here to answer, stopping it
// if it does not within a minute or ctx ends first. Another engine that
// answers while this one died at start (a pid file found) does not count.
func (e *Engine) waitAnswering(ctx context.Context, log io.Writer, logPath string) error {
	deadline := time.After(60 * time.Second)
	for {
		select {
		case <-e.exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("dockerd exited at start:\n%s", tailOf(string(b), 2000))
		case <-ctx.Done():
			e.Stop(log)
			return ctx.Err()
		case <-deadline:
			e.Stop(log)
			return fmt.Errorf("dockerd did not answer within 60s; its log is %s", logPath)
		case <-time.After(500 * time.Millisecond):
			if EngineAnswers(ctx) {
				select {
				case <-e.exited: // the answer was another engine's; this one's exit is seen next round
				default:
					return nil
				}
			}
		}
	}
}

// Exited is closed once the dockerd started here has exited; it is never
// closed for an engine that was already running.
func (e *Engine) Exited() <-chan struct{} {
	if e == nil || !e.Started {
		return nil
	}
	return e.exited
}

// dockerdNetworkArgs keep a dockerd started here out of the host's network
// namespace's settings: no iptables rules, no forwarding switched on (a
// stock dockerd turns net.ipv4.ip_forward on at start), no default bridge.
// See the package doc.
func dockerdNetworkArgs() []string {
	return []string{"--iptables=false", "--ip6tables=false", "--ip-forward=false", "--bridge=none"}
}

// EngineAnswers reports whether a container engine is running here (`docker info` answers).
func EngineAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

// Stop stops dockerd if it was started here (SIGTERM, then SIGKILL after
// 30s), and does nothing to an engine that was already running.
func (e *Engine) Stop(log io.Writer) {
	if e == nil || !e.Started {
		return
	}
	_ = e.daemon.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(30 * time.Second):
		_ = e.daemon.Process.Kill()
		<-e.exited
	}
	fmt.Fprintf(log, "kindnode: stopped dockerd\n")
}

// buildBoundedRunc compiles the boundedrunc program (package boundedrunc of
// this module) into dir.
func buildBoundedRunc(ctx context.Context, dir string) (string, error) {
	abs, err := filepath.Abs(filepath.Join(dir, "boundedrunc"))
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", abs, "github.com/metawatch/metawatch/hack/kindnode/boundedrunc")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building boundedrunc: %w\n%s", err, out)
	}
	return abs, nil
}
