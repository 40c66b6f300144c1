package check_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// metawatch check --rbac, as a ServiceAccount, passes only when its roles
// grant exactly what the configuration needs: nothing missing, nothing to spare.
func TestCheckRBACWantsNothingMissingAndNothingToSpare(t *testing.T) {
	controlplane.SkipIfShort(t)
	file := writeConfig(t, "watches:\n- kind: Pod\n- kind: Node\nrules:\n- {name: r, kinds: [Pod], setLabels: {a: b}}\n")
	const exact = `
- {apiGroups: [""], resources: [pods, nodes], verbs: [list, watch]}
- {apiGroups: [""], resources: [pods], verbs: [patch]}
- {apiGroups: [events.k8s.io], resources: [events], verbs: [create, patch]}`
	cases := map[string]struct {
		rules    string
		wantExit int
		want     string
	}{
		"exactly what it needs":     {rules: exact, want: "RBAC: nothing beyond what the configuration needs (namespace rbac-check and cluster-wide)"},
		"patch on a kind only read": {rules: exact + "\n- {apiGroups: [\"\"], resources: [nodes], verbs: [patch]}", wantExit: 1, want: "holds more than the configuration needs (namespace rbac-check and cluster-wide): patch nodes"},
		"a kind it does not watch":  {rules: exact + "\n- {apiGroups: [\"\"], resources: [secrets], verbs: [get, list]}", wantExit: 1, want: "get secrets, list secrets"},
		"a wildcard":                {rules: exact + "\n- {apiGroups: [apps], resources: [\"*\"], verbs: [list]}", wantExit: 1, want: "list *.apps"},
		"no patch on the kind it writes": {rules: strings.Replace(exact, "resources: [pods], verbs: [patch]", "resources: [pods], verbs: [list]", 1), wantExit: 1,
			want: "the identity lacks permissions: patch pods (watches[0])"},
	}
	testkit.KubectlApply(cp.Binaries.Kubectl, cp.KubeconfigPath, "apiVersion: v1\nkind: Namespace\nmetadata: {name: rbac-check}\n") //nolint:errcheck // the next apply fails if this did
	i := 0
	for name, tc := range cases {
		i++
		sa := fmt.Sprintf("mw-%d", i)
		if err := testkit.KubectlApply(cp.Binaries.Kubectl, cp.KubeconfigPath, serviceAccountWithRole("rbac-check", sa, tc.rules)); err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			// The authorizer sees a new binding within moments: ask again until
			// the verdict is the one wanted or the time is up, then say the last.
			var out string
			code := -1
			for deadline := time.Now().Add(testkit.Timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				code, out = runCheck(t, "-f", file, "--kubeconfig", cp.KubeconfigPath, "--as", "system:serviceaccount:rbac-check:"+sa, "--rbac", "--writable-kinds=Pod")
				if code == tc.wantExit && strings.Contains(out, tc.want) {
					return
				}
			}
			t.Errorf("exit %d, want %d with %q:\n%s", code, tc.wantExit, tc.want, out)
		})
	}
}

// serviceAccountWithRole is a ServiceAccount bound to a ClusterRole of its own with rules.
func serviceAccountWithRole(ns, name, rules string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: %[2]s, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s-%[2]s}
rules:%[3]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s-%[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s-%[2]s}
subjects: [{kind: ServiceAccount, name: %[2]s, namespace: %[1]s}]
`, ns, name, rules)
}
