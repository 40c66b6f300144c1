package rulecontroller

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/rules"
)

// Findings gives each of what the audits hold now, per object and rule,
// for the OpenReports reports (package reports): violations (fail), keys
// another field manager holds (warn) and keys a guardrail leaves (warn).
// Sharded, only the objects of the buckets this replica holds: the audits
// hold no others. It returns, per namespace ("" cluster-scoped), how many
// distinct objects have a finding.
func (a *Audits) Findings(each func(reports.Finding)) map[string]int {
	a.mu.Lock()
	kinds := make([]*audit, 0, len(a.kinds))
	for _, au := range a.kinds {
		kinds = append(kinds, au)
	}
	a.mu.Unlock()
	objects := map[string]int{}
	for _, au := range kinds {
		au.findings(each, objects)
	}
	return objects
}

// HasFinding reports whether Findings gives something of the object keyed
// key of kind (a GroupKind's string, as the removal brake names kinds).
func (a *Audits) HasFinding(kind string, key types.NamespacedName) bool {
	a.mu.Lock()
	au := a.kinds[kind]
	a.mu.Unlock()
	if au == nil {
		return false
	}
	au.mu.Lock()
	_, failing := au.failing[key]
	_, inherited := au.inherited[key]
	_, held := au.off.held[key]
	au.mu.Unlock()
	if failing || inherited || held {
		return true
	}
	au.left.mu.Lock()
	defer au.left.mu.Unlock()
	_, left := au.left.objects[key]
	return left
}

// findings gives each of this kind's findings, counting their objects.
func (a *audit) findings(each func(reports.Finding), objects map[string]int) {
	a.mu.Lock()
	seen := func(key types.NamespacedName) bool {
		_, failing := a.failing[key]
		_, inherited := a.inherited[key]
		return failing || inherited
	}
	for _, m := range []violators{a.failing, a.inherited} {
		for key, rs := range m {
			objects[key.Namespace]++
			for _, rule := range slices.Sorted(maps.Keys(rs)) {
				f := a.finding(key, a.uids[key], rule, reports.CheckRequired, reports.Fail, a.requirement(rule))
				f.Properties = map[string]string{"requires": a.requires[rule]}
				each(f)
			}
		}
	}
	for key, rs := range a.off.held {
		if !seen(key) {
			objects[key.Namespace]++
		}
		for _, rule := range slices.Sorted(maps.Keys(rs)) {
			each(a.finding(key, a.uids[key], rule, reports.CheckConflict, reports.Warn,
				fmt.Sprintf("rule %s wants keys another field manager owns with another value: not overwritten (set force: true on the rule to take them)", rule)))
		}
	}
	a.mu.Unlock()
	// The keys left are copied out first: forgetLocked takes the left keys'
	// lock under the audit's, so the audit's is never taken under theirs.
	a.left.mu.Lock()
	left := make(map[types.NamespacedName]leftOn, len(a.left.objects))
	for key, on := range a.left.objects {
		left[key] = on
	}
	a.left.mu.Unlock()
	a.mu.Lock()
	for key := range left {
		if _, held := a.off.held[key]; !seen(key) && !held {
			objects[key.Namespace]++
		}
	}
	a.mu.Unlock()
	for key, on := range left {
		byRule := map[string][]rules.Left{}
		for _, l := range on.keys {
			byRule[l.Rule] = append(byRule[l.Rule], l)
		}
		for _, rule := range slices.Sorted(maps.Keys(byRule)) {
			keys, guardrails := reports.LeftKeys(byRule[rule])
			f := a.finding(key, on.uid, rule, reports.CheckGuardrail, reports.Warn, leftMessage(rule, guardrails))
			f.Properties = map[string]string{"keys": keys, "guardrail": guardrails}
			each(f)
		}
	}
}

// finding is what rule finds of the object keyed key.
func (a *audit) finding(key types.NamespacedName, uid types.UID, rule, check string, result reports.Result, message string) reports.Finding {
	apiVersion, kind := a.gvk.GroupVersion().String(), a.gvk.Kind
	return reports.Finding{APIVersion: apiVersion, Kind: kind, Namespace: key.Namespace, Name: key.Name, UID: uid,
		Rule: rule, Check: check, Result: result, Message: message}
}

// requirement says what rule requires, for a violation's message.
func (a *audit) requirement(rule string) string {
	if r := a.requires[rule]; r != "" {
		return fmt.Sprintf("rule %s: the object misses required metadata (it requires %s)", rule, r)
	}
	return fmt.Sprintf("rule %s: the object misses required metadata", rule)
}

// requirements describes what each rule of rs requires.
func requirements(rs []rules.Rule) map[string]string {
	out := map[string]string{}
	for _, r := range rs {
		var parts []string
		if len(r.RequireLabels) > 0 {
			parts = append(parts, "labels "+strings.Join(r.RequireLabels, ", "))
		}
		if len(r.RequireAnnotations) > 0 {
			parts = append(parts, "annotations "+strings.Join(r.RequireAnnotations, ", "))
		}
		if len(parts) > 0 {
			out[r.Name] = strings.Join(parts, "; ")
		}
	}
	return out
}
