package main_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// --help says what metawatch is, names its subcommands, and lists every flag
// once, in a group.
func TestHelpSaysWhatMetawatchIsAndGroupsItsFlags(t *testing.T) {
	controlplane.SkipIfShort(t) // the binary is built by TestMain only then
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	help := string(out)
	for _, want := range []string{"metawatch watches the metadata of Kubernetes objects", "metawatch check -f FILE",
		"\nConfiguration:\n", "\nGuardrails", "\nAPI server:\n", "\nLeader election and sharding:\n", "\nMetrics and probes:\n", "\nPerformance:\n", "\nLogging:\n"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not say %q:\n%s", want, help)
		}
	}
	if _, ungrouped, found := strings.Cut(help, "Ungrouped:"); found {
		t.Errorf("a flag is in no group:\nUngrouped:%s", ungrouped)
	}
	seen := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		seen[m[1]]++
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("--%s is listed %d times", name, n)
		}
	}
	for _, name := range []string{"config-map", "writable-kinds", "kubeconfig", "sharding", "metrics-cert-dir", "zap-log-level", "version"} {
		if seen[name] != 1 {
			t.Errorf("--%s is not listed", name)
		}
	}
}

// check takes --config-file, as the daemon does, besides -f.
func TestCheckTakesConfigFile(t *testing.T) {
	controlplane.SkipIfShort(t)
	out, err := exec.Command(bin, "check", "--config-file", writeConfig(t, "watches:\n- kind: Pod\n")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("check --config-file: %v\n%s", err, out)
	}
}
