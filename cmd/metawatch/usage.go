package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// about is what `metawatch --help` says before the flags.
const about = `metawatch watches the metadata of Kubernetes objects, cluster-wide, and keeps
their labels and annotations with rules. What it watches and the rules are in a
selectors ConfigMap (--config-map, followed live) or a file (--config-file).

Usage:
  metawatch [flags]                 run the watcher and its rules
  metawatch check -f FILE [flags]   validate a configuration, offline or against a cluster
                                    (metawatch check --help for its flags)
`

// flagGroups order the flags of --help by what they are about, as Kubernetes
// components' named flag sets do; the flag package alone lists them sorted.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Configuration", []string{"config-map", "config-file", "wait-for-config", "dry-run", "events-include-values", "event-writes-per-minute", "open-reports", "open-reports-max-results", "field-manager", "adopt-field-manager"}},
	{"Guardrails (what any configuration may make rules write)", []string{"writable-kinds", "protected-keys", "allowed-reserved-keys",
		"write-namespaces", "exclude-write-namespaces", "allow-at-creation", "admission-policy-owner",
		"removal-brake-objects", "removal-brake-share", "removal-brake-window", "removal-brake-record"}},
	{"API server", []string{"kubeconfig", "kube-api-qps", "kube-api-burst", "write-rate-min", "write-rate-max", "write-retry-after-max"}},
	{"Leader election and sharding", []string{"leader-elect", "warm-standby", "leader-election-id", "leader-election-namespace", "leader-election-lease-duration",
		"leader-election-renew-deadline", "leader-election-retry-period", "sharding", "sharding-ring", "graceful-shutdown-timeout"}},
	{"Metrics and probes", []string{"metrics-bind-address", "metrics-secure", "metrics-cert-dir", "health-probe-bind-address"}},
	{"Performance", []string{"max-concurrent-reconciles", "container-memory-limit", "decode-unchanged-events", "watch-http2", "unchanged-bookmark-interval", "stream-lists", "list-watch-compression"}},
	{"Logging", []string{"zap-log-level", "zap-encoder", "zap-devel", "zap-stacktrace-level", "zap-time-encoding"}},
	{"Other", []string{"version"}},
}

// printUsage writes --help: what metawatch is, its subcommands, and its flags
// by group; a flag no group names is listed last, so none is ever hidden.
func printUsage(out io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(out, about)
	listed := map[string]bool{}
	for _, g := range flagGroups {
		fmt.Fprintf(out, "\n%s:\n", g.title)
		for _, name := range g.names {
			if f := fs.Lookup(name); f != nil {
				printFlag(out, f)
				listed[name] = true
			}
		}
	}
	var rest []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] {
			rest = append(rest, f)
		}
	})
	if len(rest) > 0 {
		fmt.Fprintln(out, "\nUngrouped:")
		for _, f := range rest {
			printFlag(out, f)
		}
	}
}

// printFlag writes one flag as Go's flag package does, with two dashes.
func printFlag(out io.Writer, f *flag.Flag) {
	kind, usage := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if kind != "" {
		line += " " + kind
	}
	if def := f.DefValue; def != "" && !slices.Contains([]string{"false", "0", "[]"}, def) {
		usage += fmt.Sprintf(" (default %s)", def)
	}
	fmt.Fprintf(out, "%s\n      %s\n", line, strings.ReplaceAll(usage, "\n", "\n      "))
}
