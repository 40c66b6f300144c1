package rulecontroller

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/rules"
)

// The audits' findings are what they hold, one per object and rule: a
// violation fails, a key another manager holds and keys a guardrail leaves
// warn; each object is counted once in its namespace, whatever it has.
// Findings runs while the audits change, without a deadlock.
func TestFindingsAreWhatTheAuditsHold(t *testing.T) {
	audits := NewAudits(false)
	au := audits.forKind(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, []rules.Rule{{Name: "owner", RequireLabels: []string{"owner"}}}, nil)
	key := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	au.observe(key("a", "p1"), "u1", []rules.Violation{{Rule: "owner", MissingLabels: []string{"owner"}}})
	au.observeHeld(key("a", "p1"), "u1", map[string]bool{"tier": true}) // the same object: counted once
	au.observeHeld(key("b", "p2"), "u2", map[string]bool{"tier": true})
	au.observeLeft(key("b", "p3"), "u3", map[string]int{config.RefusedProtected: 1},
		[]rules.Left{{Map: config.Labels, Key: "team", Action: "release", Reason: config.RefusedProtected}})

	var got []string
	objects := audits.Findings(func(f reports.Finding) {
		got = append(got, fmt.Sprintf("%s/%s %s %s %s %s", f.Namespace, f.Name, f.Rule, f.Check, f.Result, f.UID))
	})
	sort.Strings(got)
	want := []string{
		"a/p1 owner required-metadata fail u1",
		"a/p1 tier conflict warn u1",
		"b/p2 tier conflict warn u2",
		"b/p3  guardrail warn u3",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("findings %q, want %q", got, want)
	}
	if objects["a"] != 1 || objects["b"] != 2 {
		t.Errorf("objects per namespace %v, want a: 1, b: 2", objects)
	}

	before := audits.Version()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			au.observeLeft(key("c", fmt.Sprintf("p%d", i)), types.UID(fmt.Sprint(i)), map[string]int{config.RefusedProtected: 1}, nil)
			au.forget(key("c", fmt.Sprintf("p%d", i)))
		}
	})
	for range 200 {
		audits.Findings(func(reports.Finding) {})
	}
	wg.Wait()
	if audits.Version() == before {
		t.Errorf("the version did not change with what the audits hold")
	}
}
