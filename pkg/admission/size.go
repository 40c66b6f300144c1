package admission

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metawatch/metawatch/pkg/config"
)

// MaxExpressionCodePoints is the longest CEL expression the API server
// compiles: its CEL parser's limit (cel-go's ExpressionSizeCodePointLimit,
// which Kubernetes keeps at its default), counted in Unicode code points of
// the expression's text. A policy with a longer one is refused at creation.
const MaxExpressionCodePoints = 100_000

// CheckSizes builds the policies of rules as Policy does and returns an
// invalid-configuration error (config.IsInvalid) naming every expression
// over MaxExpressionCodePoints: the rule, what in it the expression comes
// from, its size and the fix. config cannot call this (admission imports
// config): package acceptance does, for the reloader before a configuration
// runs and for metawatch check.
func CheckSizes(rules []Rule) error {
	var errs []error
	for _, r := range rules {
		policy, _, err := Policy(r)
		if err != nil {
			continue // not a size: the Syncer reports it as it makes the policy
		}
		for _, c := range policy.Spec.MatchConditions {
			errs = append(errs, sizeError(r.Name, c.Expression, matchConditionSources[c.Name]))
		}
		_, sources := mutationsOf(r)
		for i, m := range policy.Spec.Mutations {
			errs = append(errs, sizeError(r.Name, m.ApplyConfiguration.Expression, mutationFix(sources[i])))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return config.Invalid(fmt.Errorf("atCreation: the admission policies would be refused by the API server: %w", err))
	}
	return nil
}

// sizeFix says what an expression comes from and how to shorten it.
type sizeFix struct{ from, fix string }

var matchConditionSources = map[string]sizeFix{
	"rule-match":  {"the rule's match.labelSelector", "shorten the selector"},
	"write-scope": {"the write scope (writeScope, --write-namespaces, --exclude-write-namespaces)", "list fewer namespaces"},
	"watched":     {"the watches of the rule's kinds (namespaces, labelSelector, fieldSelector)", "list fewer namespaces or selector values in those watches"},
}

func mutationFix(source string) sizeFix {
	return sizeFix{source, "shorten the value (every key is one expression)"}
}

func sizeError(rule, expression string, f sizeFix) error {
	n := utf8.RuneCountInString(expression)
	if n <= MaxExpressionCodePoints {
		return nil
	}
	return fmt.Errorf("rule %q: the CEL expression of %s is %d code points, over the API server's limit of %d per expression: "+
		"%s, or remove atCreation from the rule (the controller keeps the keys all the same)", rule, f.from, n, MaxExpressionCodePoints, f.fix)
}

// OfflineRules are Rules as the cluster would resolve conf's built-in
// kinds, without one: the resource named as kubectl guesses it, the scope
// from config.BuiltInScope (namespaced when unknown, which only adds the
// watch's namespaces). For CheckSizes offline, where the exact resource
// changes an expression by a few characters at most.
func OfflineRules(conf *config.Config, scopes ...*config.WriteScope) []Rule {
	watches := make([]config.ResolvedWatch, 0, len(conf.Watches))
	for _, w := range conf.Watches {
		gvk := w.GroupVersionKind()
		resource, _ := meta.UnsafeGuessKindToResource(gvk)
		namespaced, known := config.BuiltInScope(gvk.GroupKind())
		rw := config.ResolvedWatch{GVK: gvk, Resource: resource, Namespaced: namespaced || !known, Namespaces: w.Namespaces}
		rw.Label, _ = labels.Parse(w.LabelSelector) // validated with the configuration
		rw.Field, _ = fields.ParseSelector(w.FieldSelector)
		watches = append(watches, rw)
	}
	return Rules(conf, watches, scopes...)
}
