package check

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/preview"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/rules"
)

// outputOpenReports is -o openreports: the results as OpenReports reports,
// built by the Builder the controller's --open-reports uses.
const outputOpenReports = "openreports"

// openReports folds each object's preview into the reports metawatch would
// keep with --open-reports, with what it would write besides: a configuration
// not yet applied is reviewed where its reports will be read, in CI.
type openReports struct {
	b       *reports.Builder
	summary preview.Summary
}

func newOpenReports(id *authority.Identity, maxResults int, now time.Time) *openReports {
	return &openReports{b: &reports.Builder{Names: reports.Names{Identity: id}, MaxResults: maxResults, Now: now}}
}

// add folds r, the preview of obj.
func (o *openReports) add(obj preview.Object, r preview.Report) {
	o.summary.Objects++
	if r.Skipped != "" {
		o.summary.Skipped++
		return
	}
	if r.Changes() {
		o.summary.Change++
	}
	if r.Offends() {
		o.summary.Offend++
	}
	findings := findingsOf(obj, r)
	if len(findings) == 0 {
		o.b.Passed(obj.GetNamespace(), 1)
	}
	for _, f := range findings {
		o.b.Add(f)
	}
}

// findingsOf are the results of one object's preview: fail for a
// violation; warn for a conflict, a key a guardrail leaves, and each
// write, per rule and action (set, change, adopt, remove, release).
func findingsOf(obj preview.Object, r preview.Report) []reports.Finding {
	gvk := obj.GroupVersionKind()
	finding := func(rule, check string, result reports.Result, message string, props map[string]string) reports.Finding {
		return reports.Finding{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(),
			Rule: rule, Check: check, Result: result, Message: message, Properties: props}
	}
	var out []reports.Finding
	for _, v := range r.Violations {
		missing := describeViolation(v)
		out = append(out, finding(v.Rule, reports.CheckRequired, reports.Fail, fmt.Sprintf("rule %s: the object misses required metadata (%s)", v.Rule, missing),
			map[string]string{"missing": missing}))
	}
	type ruleAction struct{ rule, action string }
	writes := map[ruleAction][]string{}
	for _, w := range r.Writes {
		action := w.Action
		if action == "set" && w.Had {
			action = "change"
		}
		key := fmt.Sprintf("%s %s", strings.TrimSuffix(w.Map, "s"), w.Key)
		if action != "remove" && action != "release" {
			key += fmt.Sprintf("=%q", w.Value)
		}
		writes[ruleAction{w.Rule, action}] = append(writes[ruleAction{w.Rule, action}], key)
	}
	for ra, keys := range writes {
		sort.Strings(keys)
		subject := "rule " + ra.rule
		if ra.rule == "" {
			subject = "no rule wants keys metawatch owns: it"
		}
		out = append(out, finding(ra.rule, reports.CheckWrite, reports.Warn, fmt.Sprintf("%s would %s %s", subject, ra.action, strings.Join(keys, ", ")),
			map[string]string{"action": ra.action, "keys": strings.Join(keys, ", ")}))
	}
	conflicts := map[string][]string{}
	for _, c := range r.Conflicts {
		conflicts[c.Rule] = append(conflicts[c.Rule], fmt.Sprintf("%s %s=%q (field manager %s)", strings.TrimSuffix(c.Map, "s"), c.Key, c.Want, c.Manager))
	}
	for rule, keys := range conflicts {
		sort.Strings(keys)
		out = append(out, finding(rule, reports.CheckConflict, reports.Warn,
			fmt.Sprintf("rule %s wants keys another field manager owns with another value: not overwritten (set force: true on the rule to take them)", rule),
			map[string]string{"action": "leave", "keys": strings.Join(keys, ", ")}))
	}
	left := map[string][]rules.Left{}
	for _, l := range r.Left {
		left[l.Rule] = append(left[l.Rule], l)
	}
	for rule, ls := range left {
		keys, guardrails := reports.LeftKeys(ls)
		out = append(out, finding(rule, reports.CheckGuardrail, reports.Warn, fmt.Sprintf("keys left as they are: the guardrail %s forbids writing them", guardrails),
			map[string]string{"action": "leave", "keys": keys, "guardrail": guardrails}))
	}
	return out
}

func describeViolation(v rules.Violation) string {
	var parts []string
	if len(v.MissingLabels) > 0 {
		parts = append(parts, "missing labels "+strings.Join(v.MissingLabels, ", "))
	}
	if len(v.MissingAnnotations) > 0 {
		parts = append(parts, "missing annotations "+strings.Join(v.MissingAnnotations, ", "))
	}
	return strings.Join(parts, "; ")
}

// write writes the reports as a List, YAML, for kubectl apply -f -.
func (o *openReports) write(out io.Writer) (preview.Summary, error) {
	namespaced, cluster := o.b.Reports()
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	var objs []any
	for _, r := range namespaced {
		objs = append(objs, r)
	}
	if cluster != nil {
		objs = append(objs, cluster)
	}
	for _, obj := range objs {
		raw, err := json.Marshal(obj)
		if err != nil {
			return o.summary, err
		}
		list.Items = append(list.Items, runtime.RawExtension{Raw: raw})
	}
	data, err := yaml.Marshal(list)
	if err != nil {
		return o.summary, err
	}
	_, err = out.Write(data)
	return o.summary, err
}
