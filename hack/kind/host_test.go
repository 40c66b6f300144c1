package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/hack/kindnode"
)

// hostNetwork is what make kind's dockerd must leave as it found it in the
// host's network namespace, so that make cluster's node (which reaches the
// API server through it) works beside a kind cluster: the firewall rules
// (iptables-save and ip6tables-save, counters left out) and the forwarding
// switches a stock dockerd turns on.
type hostNetwork map[string]string

// forwardingSysctls are the switches dockerd's --ip-forward (on by default)
// sets when it makes a bridge network such as kind's.
var forwardingSysctls = []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"}

func readHostNetwork(t *testing.T) hostNetwork {
	t.Helper()
	// A new machine may have no iptables tools: the rules are in the kernel all the same.
	if err := kindnode.EnsurePackages(t.Context(), os.Stderr, map[string]string{"iptables-save": "iptables", "ip6tables-save": "iptables"}); err != nil {
		t.Fatal(err)
	}
	state := hostNetwork{}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(save).Output()
		if err != nil {
			t.Fatalf("%s: %v", save, err)
		}
		state[save] = withoutCounters(string(out))
	}
	for _, name := range forwardingSysctls {
		b, err := os.ReadFile(filepath.Join("/proc/sys", name))
		if err != nil {
			t.Fatal(err)
		}
		state[name] = strings.TrimSpace(string(b))
	}
	return state
}

// withoutCounters drops what changes with traffic alone: comment lines (the
// time of the dump) and the packet counters of the chain lines.
func withoutCounters(dump string) string {
	var kept []string
	for _, line := range strings.Split(dump, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, ":") {
			if i := strings.LastIndex(line, " ["); i > 0 {
				line = line[:i]
			}
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "\n")
}

// assertHostNetworkUnchanged fails for each part of the host's network state
// that differs from before, saying when it was seen.
func assertHostNetworkUnchanged(t *testing.T, before hostNetwork, when string) {
	t.Helper()
	now := readHostNetwork(t)
	for name, was := range before {
		if now[name] != was {
			t.Errorf("%s, the host's %s changed:\nbefore:\n%s\nnow:\n%s", when, name, was, now[name])
		}
	}
}
