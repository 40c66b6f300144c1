package apiserver_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/apiserver"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Resolve maps each watched kind to the resource and scope the API server
// serves it as, and a kind it does not serve, or a watch its scope does not
// allow, is the configuration's fault, naming the field and the fix.
func TestResolveMapsKindsAsTheServerServesThem(t *testing.T) {
	controlplane.SkipIfShort(t)
	type resolved struct {
		resource   schema.GroupVersionResource
		namespaced bool
	}
	cases := map[string]struct {
		config  string
		want    []resolved
		wantErr []string // the invalid configuration's error says each
	}{
		"a namespaced core kind is its resource in v1": {
			config: "watches:\n- kind: Pod\n",
			want:   []resolved{{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true}},
		},
		"a cluster-scoped kind is not namespaced": {
			config: "watches:\n- kind: Node\n",
			want:   []resolved{{schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, false}},
		},
		"a kind of a named group is found without its apiVersion": {
			config: "watches:\n- kind: Deployment\n- kind: Namespace\n",
			want: []resolved{
				{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
				{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
			},
		},
		"a kind the server does not serve names the field": {
			config:  "watches:\n- kind: Pod\n- kind: Gadget\n",
			wantErr: []string{"watches[1].kind", "Gadget"},
		},
		"namespaces on a cluster-scoped kind say to remove them": {
			config:  "watches:\n- kind: Node\n  namespaces: [shop]\n",
			wantErr: []string{"watches[0].namespaces", "Node is cluster-scoped; remove namespaces"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			conf, err := config.Parse([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			watches, _, err := apiserver.Resolve(cp.Config, conf)
			if len(tc.wantErr) > 0 {
				if !config.IsInvalid(err) {
					t.Fatalf("Resolve returned %v, want an invalid configuration", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []resolved
			for _, w := range watches {
				if w.Path != "" { // the watches the configuration wrote, not implicit ones
					got = append(got, resolved{w.Resource, w.Namespaced})
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("resolved %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("watches[%d] resolved to %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// An API server that cannot be reached is not the configuration's fault:
// Resolve's error says it is unreachable (so start-up waits for it), never
// that the configuration is invalid.
func TestResolveOfAnUnreachableServerIsNotInvalid(t *testing.T) {
	controlplane.SkipIfShort(t)
	conf, err := config.Parse([]byte("watches:\n- kind: Pod\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = apiserver.Resolve(at(cp.Config, testkit.FreeAddress(t)), conf)
	if err == nil || config.IsInvalid(err) || !apiserver.Unreachable(err) {
		t.Errorf("Resolve against no server returned %v (invalid configuration: %v); want an unreachable server's error", err, config.IsInvalid(err))
	}
}
