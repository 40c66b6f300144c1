package config_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/config"
)

func TestGuardrailsJudgeAKindAKeyAndAScopeAlone(t *testing.T) {
	ns := func(include, exclude string) config.WriteScope {
		return config.WriteScope{Namespaces: fieldsOrNil(include), ExcludeNamespaces: fieldsOrNil(exclude)}
	}
	for name, tc := range map[string]struct {
		flags []string
		judge func(*config.Guardrails) error
		want  string // in the error; "": allowed
	}{
		"Pods are writable by default": {judge: func(l *config.Guardrails) error { return l.KindError(schema.GroupKind{Kind: "Pod"}, true) }},
		"a Node is not writable by default": {judge: func(l *config.Guardrails) error { return l.KindError(schema.GroupKind{Kind: "Node"}, false) },
			want: "--writable-kinds allows Pod,Deployment, not Node"},
		"* allows a namespaced kind": {flags: []string{"--writable-kinds=*"}, judge: func(l *config.Guardrails) error { return l.KindError(schema.GroupKind{Kind: "ConfigMap"}, true) }},
		"* does not allow a cluster-scoped kind": {flags: []string{"--writable-kinds=*"}, judge: func(l *config.Guardrails) error { return l.KindError(schema.GroupKind{Kind: "Node"}, false) },
			want: "not Node"},
		"a key the operator protects is refused": {flags: []string{"--protected-keys=tier"}, judge: func(l *config.Guardrails) error { return l.KeyError("tier") },
			want: "--protected-keys protects tier (pattern tier)"},
		"a plain key is allowed": {judge: func(l *config.Guardrails) error { return l.KeyError("team") }},
		"a reserved key not allowed is refused": {flags: []string{"--protected-keys=x"}, judge: func(l *config.Guardrails) error { return l.KeyError("topology.kubernetes.io/zone") },
			want: "under a prefix Kubernetes reserves"},
		"a reserved key allowed is allowed": {flags: []string{"--protected-keys=x", "--allowed-reserved-keys=topology.kubernetes.io/*"},
			judge: func(l *config.Guardrails) error { return l.KeyError("topology.kubernetes.io/zone") }},
		"any scope is within no operator scope": {judge: func(l *config.Guardrails) error { return l.WithinScope(nil) }},
		"an unbounded scope is not within --write-namespaces": {flags: []string{"--write-namespaces=a"},
			judge: func(l *config.Guardrails) error { return l.WithinScope([]config.WriteScope{ns("", "b")}) }, want: "writes in every namespace"},
		"a narrower list is within --write-namespaces": {flags: []string{"--write-namespaces=a,b"},
			judge: func(l *config.Guardrails) error {
				return l.WithinScope([]config.WriteScope{ns("a,c", ""), ns("a", "")})
			}},
		"a namespace outside --write-namespaces is refused": {flags: []string{"--write-namespaces=a"},
			judge: func(l *config.Guardrails) error { return l.WithinScope([]config.WriteScope{ns("a,c", "")}) }, want: "namespace c"},
		"an excluded namespace the scope reaches is refused": {flags: []string{"--exclude-write-namespaces=kube-system"},
			judge: func(l *config.Guardrails) error { return l.WithinScope([]config.WriteScope{ns("", "default")}) }, want: "namespace kube-system"},
		"an excluded namespace the scope excludes too is fine": {flags: []string{"--exclude-write-namespaces=kube-system"},
			judge: func(l *config.Guardrails) error { return l.WithinScope([]config.WriteScope{ns("", "kube-system")}) }},
		"an excluded namespace the scope does not list is fine": {flags: []string{"--exclude-write-namespaces=kube-system"},
			judge: func(l *config.Guardrails) error { return l.WithinScope([]config.WriteScope{ns("shop", "")}) }},
	} {
		t.Run(name, func(t *testing.T) {
			limits := guardrailsFromFlags(t, tc.flags...)
			err := tc.judge(&limits)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func fieldsOrNil(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(list, ",")
}
