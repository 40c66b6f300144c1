package main_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/controlplane"
)

func TestCheck(t *testing.T) {
	controlplane.SkipIfShort(t)
	cases := map[string]struct {
		config     string
		kubeconfig bool
		wantExit   int
		want       []string
	}{
		"a valid bare config, offline": {config: "watches:\n- kind: Pod\n", wantExit: 0, want: []string{"1 watches, 0 rules: valid offline", "SUCCESS"}},
		"a valid ConfigMap manifest, offline": {
			config:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata:\n  config.yaml: |\n    watches: [{kind: Node}]\n",
			wantExit: 0, want: []string{"SUCCESS"},
		},
		"every error listed, offline": {
			config:   "watches:\n- kind: Pod\n  labelSelector: 'a in ('\n- kind: Node\n  fieldSelector: x\n",
			wantExit: 1, want: []string{"FAILED", "watches[0].labelSelector", "watches[1].fieldSelector"},
		},
		"resolved and permitted on the cluster": {
			config:     "watches:\n- kind: Pod\n- kind: Deployment\nrules:\n- {name: r, kinds: [Pod], setLabels: {a: b}}\n",
			kubeconfig: true, wantExit: 0,
			want: []string{"KIND", "Pod", "pods", "yes", "Deployment", "deployments.apps", "SUCCESS"},
		},
		"an unknown kind on the cluster": {
			config: "watches:\n- kind: Podz\n", kubeconfig: true, wantExit: 1, want: []string{`watches[0].kind: Invalid value: "Podz"`},
		},
		"a field the server rejects": {
			config: "watches:\n- kind: Pod\n  fieldSelector: spec.priority=1\n", kubeconfig: true, wantExit: 1,
			want: []string{`watches[0].fieldSelector "spec.priority=1"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"check", "-f", writeConfig(t, tc.config)}
			if tc.kubeconfig {
				args = append(args, "--kubeconfig", cp.KubeconfigPath)
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = []string{"KUBECONFIG="} // offline unless asked
			out, err := cmd.CombinedOutput()
			if code := exitCode(err); code != tc.wantExit {
				t.Errorf("exit %d, want %d:\n%s", code, tc.wantExit, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output does not contain %q:\n%s", w, out)
				}
			}
		})
	}
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
