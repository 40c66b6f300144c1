package onenode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// netnsName is the network namespace everything of the cluster runs in.
const netnsName = "metawatch-cluster"

// hostVeth is the host's end of the veth pair into the namespace.
const hostVeth = "mwc-host"

// debianPackages provide what the node runs besides the Kubernetes binaries.
var debianPackages = map[string]string{
	"containerd":              "containerd",
	"containerd-shim-runc-v2": "containerd",
	"ctr":                     "containerd",
	"runc":                    "runc",
	cniBinDir + "/bridge":     "containernetworking-plugins",
	"iptables":                "iptables",
	"conntrack":               "conntrack",
	"ip":                      "iproute2",
	"nsenter":                 "util-linux",
}

// checkHost says what this machine lacks to run a node: root and cgroups
// cannot be installed; missing packages can (installPackages).
func checkHost() error {
	var problems []string
	if os.Geteuid() != 0 {
		problems = append(problems, "it must run as root (the kubelet, containerd and network namespaces need it): run `sudo make cluster`")
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		if _, err2 := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err2 != nil {
			problems = append(problems, "no cgroups are mounted at /sys/fs/cgroup (the kubelet needs the memory and cpu controllers)")
		}
	}
	if len(problems) > 0 {
		return errors.New("this machine cannot run a node: " + strings.Join(problems, "; "))
	}
	return nil
}

// missingPackages lists the Debian packages of the commands not found.
func missingPackages() []string {
	seen := map[string]bool{}
	var out []string
	for cmd, pkg := range debianPackages {
		found := false
		if strings.HasPrefix(cmd, "/") {
			_, err := os.Stat(cmd)
			found = err == nil
		} else {
			_, err := exec.LookPath(cmd)
			found = err == nil
		}
		if !found && !seen[pkg] {
			seen[pkg] = true
			out = append(out, pkg)
		}
	}
	return out
}

// installPackages installs the missing packages with apt-get, saying which.
func installPackages(ctx context.Context, log io.Writer) error {
	pkgs := missingPackages()
	if len(pkgs) == 0 {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("missing %s and no apt-get to install them: install them and run again", strings.Join(pkgs, ", "))
	}
	fmt.Fprintf(log, "cluster: installing Debian packages %s (apt-get)\n", strings.Join(pkgs, " "))
	if err := run(ctx, "apt-get", "update", "-qq"); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "-qq"}, pkgs...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}

// createNetwork makes the namespace, its loopback, the veth pair to the host,
// IP forwarding inside it (for pod to Service traffic) and a route for the
// Service addresses. The namespace has
// no default route: a packet to any address but the host's end of the veth,
// the node's and the pods' fails at once instead of leaving the machine.
func createNetwork(ctx context.Context) error {
	steps := [][]string{
		{"ip", "netns", "add", netnsName},
		{"ip", "-n", netnsName, "link", "set", "lo", "up"},
		{"ip", "link", "add", hostVeth, "type", "veth", "peer", "name", "mwc-node", "netns", netnsName},
		{"ip", "addr", "add", fmt.Sprintf("%s/%d", hostIP, vethPrefixLen), "dev", hostVeth},
		{"ip", "link", "set", hostVeth, "up"},
		{"ip", "-n", netnsName, "addr", "add", fmt.Sprintf("%s/%d", nodeIP, vethPrefixLen), "dev", "mwc-node"},
		{"ip", "-n", netnsName, "link", "set", "mwc-node", "up"},
		{"ip", "netns", "exec", netnsName, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		// A route for Service addresses, so that a process on the node (not in a
		// pod) can connect to one: the kernel looks the route up before
		// kube-proxy's rules rewrite the address. It points at loopback, so what
		// no rule rewrote stays in the namespace and is dropped there (no dummy
		// device: this machine's kernel has no such module).
		{"ip", "-n", netnsName, "route", "add", serviceCIDR, "dev", "lo"},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// deleteNetwork removes the namespace (and with it the veth pair, the
// bridge and every iptables rule kube-proxy wrote in it). The kernel tears a
// namespace down in the background, so it waits (up to ten seconds) for the
// host's end of the veth to go: a new cluster could not make it before.
func deleteNetwork() error {
	if _, err := os.Stat(netnsPath()); err == nil {
		if err := run(context.Background(), "ip", "netns", "delete", netnsName); err != nil {
			return err
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat("/sys/class/net/" + hostVeth); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the network namespace %s is deleted but %s is still there: a process still uses the namespace", netnsName, hostVeth)
		}
	}
}

func run(ctx context.Context, name string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
