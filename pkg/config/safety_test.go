package config_test

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/config"
)

// A value of the wrong type is reported in the user's words: the field path
// with its index, the line, what was expected and what was found; never a Go
// type name.
func TestWrongTypesAreReportedWithoutGoTypeNames(t *testing.T) {
	cases := map[string]struct {
		config string
		want   string
	}{
		"a string for a list of namespaces": {
			config: "watches:\n- kind: Pod\n  namespaces: shop\n",
			want:   "watches[0].namespaces (line 3): expected a list of strings (e.g. [a, b]), found a string",
		},
		"a list for a map of labels": {
			config: "watches:\n- kind: Pod\nrules:\n- name: r\n  kinds: [Pod]\n  setLabels: [a, b]\n",
			want:   "rules[0].setLabels (line 6): expected a map of strings (key: value), found a list",
		},
		"a number for the watches": {
			config: "watches: 3\n",
			want:   "watches (line 1): expected a list of objects (e.g. [a, b]), found a number",
		},
		"an object for a kind": {
			config: "watches:\n- kind: {name: Pod}\n",
			want:   "watches[0].kind (line 2): expected a string, found an object",
		},
		"a string for force": {
			config: "watches:\n- kind: Pod\nrules:\n- {name: r, kinds: [Pod], setLabels: {a: b}, force: yes-please}\n",
			want:   "rules[0].force (line 4): expected true or false, found a string",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.config))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\n does not say %q", err, tc.want)
			}
			for _, goName := range []string{"Go struct", "[]string", "map[string]string", "config.", "unmarshal"} {
				if strings.Contains(err.Error(), goName) {
					t.Errorf("error %q names Go's %q", err, goName)
				}
			}
		})
	}
}

// Everything about write safety that can be checked offline is: kind names,
// keys under the prefixes Kubernetes reserves (unless a rule opts in key by
// key), and the write scope's namespaces.
func TestWriteSafetyIsCheckedOffline(t *testing.T) {
	cases := map[string]struct {
		config string
		want   string // "" for valid
	}{
		"a lower-case kind":  {config: "watches: [{kind: pod}]\n", want: `watches[0].kind: Invalid value: "pod": not a kind name: kinds are case-sensitive`},
		"a kind with spaces": {config: "watches: [{kind: Pod Spec}]\n", want: `watches[0].kind: Invalid value: "Pod Spec": not a kind name`},
		"a reserved label key": {
			config: "watches: [{kind: Node}]\nrules:\n- {name: r, kinds: [Node], setLabels: {node-role.kubernetes.io/spot: \"true\"}}\n",
			want:   "rules[0].setLabels[node-role.kubernetes.io/spot]: Forbidden: node-role.kubernetes.io/spot is under a prefix Kubernetes reserves",
		},
		"a reserved key copied from the namespace": {
			config: "watches: [{kind: Pod}]\nrules:\n- {name: r, kinds: [Pod], copyFromNamespace: {labels: [pod-security.kubernetes.io/enforce]}}\n",
			want:   "rules[0].copyFromNamespace.labels[0]: Forbidden",
		},
		"a reserved key removed": {
			config: "watches: [{kind: Pod}]\nrules:\n- {name: r, kinds: [Pod], removeAnnotations: [k8s.io/x]}\n",
			want:   "rules[0].removeAnnotations[0]: Forbidden",
		},
		"a reserved key opted into": {
			config: "watches: [{kind: Node}]\nrules:\n- {name: r, kinds: [Node], setLabels: {node-role.kubernetes.io/spot: \"true\"}, reservedKeys: [node-role.kubernetes.io/spot]}\n",
		},
		"an opt-in the rule does not use": {
			config: "watches: [{kind: Node}]\nrules:\n- {name: r, kinds: [Node], setLabels: {a: b}, reservedKeys: [node-role.kubernetes.io/spot]}\n",
			want:   `rules[0].reservedKeys[0]: Invalid value: "node-role.kubernetes.io/spot": this rule does not write it`,
		},
		"a look-alike prefix is not reserved": {
			config: "watches: [{kind: Pod}]\nrules:\n- {name: r, kinds: [Pod], setLabels: {notkubernetes.io/x: v}}\n",
		},
		"a write scope": {
			config: "watches: [{kind: Pod}]\nwriteScope: {namespaces: [shop, web], excludeNamespaces: [kube-system]}\n",
		},
		"an invalid namespace in the write scope": {
			config: "watches: [{kind: Pod}]\nwriteScope: {excludeNamespaces: [Kube_System]}\n",
			want:   `writeScope.excludeNamespaces[0]: Invalid value: "Kube_System"`,
		},
		"a namespace both in and out of scope": {
			config: "watches: [{kind: Pod}]\nwriteScope: {namespaces: [shop], excludeNamespaces: [shop]}\n",
			want:   `writeScope.excludeNamespaces[0]: Invalid value: "shop": also listed under writeScope.namespaces`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.config))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v\n does not say %q", err, tc.want)
			}
		})
	}
}

func TestWriteScopeAllows(t *testing.T) {
	scope := &config.WriteScope{Namespaces: []string{"shop", "web"}, ExcludeNamespaces: []string{"web"}}
	for ns, want := range map[string]bool{"shop": true, "web": false, "other": false, "": true} {
		if got := scope.Allows(ns); got != want {
			t.Errorf("Allows(%q) = %v, want %v", ns, got, want)
		}
	}
	var all *config.WriteScope
	if !all.Allows("anything") {
		t.Error("no scope must allow every namespace")
	}
}

// keepAnnotations: ["*"] keeps every annotation, but never a Secret's unless
// named one by one: kubectl's last-applied-configuration holds its data.
func TestSecretsKeepOnlyNamedAnnotations(t *testing.T) {
	c, err := config.Parse([]byte("watches: [{kind: Secret}, {kind: Pod}]\ncache: {keepAnnotations: ['*', example.com/owner]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	watches, _, err := config.Resolve(c, newMapper(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range watches {
		switch w.GVK.Kind {
		case "Secret":
			if got := sets.List(w.Annotations); !reflect.DeepEqual(got, []string{"example.com/owner"}) {
				t.Errorf("Secrets keep annotations %v, want only the named example.com/owner", got)
			}
		case "Pod":
			if w.Annotations != nil {
				t.Errorf("Pods keep %v, want every annotation (nil)", sets.List(w.Annotations))
			}
		}
	}
}

func TestWrongTypeUnderAMapKeyIsPathedLikeAFieldPath(t *testing.T) {
	_, err := config.Parse([]byte("watches: [{kind: Pod}]\nrules:\n- {name: r, kinds: [Pod], setLabels: {example.com/x: [v]}}\n"))
	if want := "rules[0].setLabels[example.com/x] (line 3): expected a string, found a list"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v\n does not say %q", err, want)
	}
}
