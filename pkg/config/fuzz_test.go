package config_test

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/pkg/config"
)

// FuzzParse checks that Parse never panics, and that whatever it accepts is
// valid and survives a round trip: what users read back is what runs.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"watches:\n- kind: Pod\n",
		"watches:\n- kind: Pod\n  namespaces: [shop]\n  labelSelector: app=web\n  fieldSelector: status.phase!=Succeeded\n",
		"watches:\n- kind: Deployment\n  apiVersion: apps/v1\n- kind: Node\n  labelSelector: '!node-role.kubernetes.io/control-plane'\n",
		"watches:\n- kind: Pod\n  labelSelector: team in (a\n",
		"watches: [{kind: Pod}, {kind: Pod}]\n",
		"watches:\n- kind: Pod\n  namespaces: [Not_A_Namespace]\n",
		"{}", "", "- a\n", "watches: 3\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data)
		if err != nil {
			return
		}
		if errs := config.Validate(c); len(errs) > 0 {
			t.Fatalf("Parse accepted a configuration Validate rejects: %v", errs)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshalling an accepted configuration: %v", err)
		}
		again, err := config.Parse(out)
		if err != nil {
			t.Fatalf("an accepted configuration does not parse after a round trip: %v\n%s", err, out)
		}
		if !equality.Semantic.DeepEqual(c, again) {
			t.Fatalf("round trip changed the configuration:\n%+v\n%+v", c, again)
		}
	})
}

// FuzzGuardrails checks the guardrails' properties on arbitrary keys and
// patterns: a key named in --protected-keys is always refused, protecting one
// more pattern never lets through what was refused, the check leaves the
// configuration as it was, and a limit flag read back from its own value is
// the same list.
func FuzzGuardrails(f *testing.F) {
	for _, seed := range [][2]string{
		{"pod-template-hash", "pod-template-hash"}, {"example.com/team", "example.com/*"},
		{"topology.kubernetes.io/zone", "*"}, {"a", "b/*"}, {"app.kubernetes.io/managed-by", "app.kubernetes.io/*"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, key, pattern string) {
		conf, err := config.Parse([]byte(fmt.Sprintf("watches: [{kind: Pod}]\nrules:\n- {name: r, kinds: [Pod], setLabels: {%q: v}}\n", key)))
		if err != nil {
			return // not a key a rule may name
		}
		before, _ := config.Hash(conf)
		open := config.Guardrails{WritableKinds: []string{"Pod"}, AllowedReservedKeys: []string{"*"}}
		narrowed := open
		if err := bindLimitFlags(&narrowed, "--protected-keys="+pattern); err != nil {
			return // not a pattern the flag takes
		}
		wide, narrow := open.Check(conf, config.OfflineScope(conf)), narrowed.Check(conf, config.OfflineScope(conf))
		if wide != nil {
			t.Fatalf("nothing protected, the rule on %q was refused: %v", key, wide)
		}
		if narrow != nil && !config.IsInvalid(narrow) {
			t.Fatalf("a refusal that is not an invalid configuration: %v", narrow)
		}
		if pattern == key && narrow == nil {
			t.Fatalf("--protected-keys=%s let a rule write it", key)
		}
		if after, _ := config.Hash(conf); after != before {
			t.Fatalf("the check changed the configuration")
		}
		again := config.Guardrails{}
		if err := bindLimitFlags(&again, "--protected-keys="+strings.Join(narrowed.ProtectedKeys, ",")); err != nil ||
			!slices.Equal(again.ProtectedKeys, narrowed.ProtectedKeys) {
			t.Fatalf("--protected-keys read back from %q: %v, %v", narrowed.ProtectedKeys, again.ProtectedKeys, err)
		}
	})
}

func bindLimitFlags(l *config.Guardrails, args ...string) error {
	fs := flag.NewFlagSet("fuzz", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	l.BindFlags(fs)
	return fs.Parse(args)
}
