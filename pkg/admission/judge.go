package admission

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/config"
)

// A pair is judged by what the policy itself writes and where, read back
// from its spec (its resource rules, its write-scope match condition, its
// mutations), not from a configuration: after a restart with narrower flags
// the configuration may be rejected and no generation runs, yet the policy
// goes on writing on every create. Reading the spec also judges the pairs an
// older metawatch made, which carry no record of their own. What cannot be
// read back (a mutation or a scope of a shape metawatch does not write, a
// resource the server no longer maps) is not allowed: a policy nobody can
// account for must not write.

// keyInMutation is the whole of a mutation as mutationsOf writes it: an
// optional condition (no other conditional in it: it only reads), then one key set to a quoted value
// or to the Namespace's value of a key. Anything else (a second key, a
// field besides metadata) does not match.
var keyInMutation = regexp.MustCompile(`^(?:[^?]* \? )?Object\{metadata: Object\.metadata\{(labels|annotations): \{(` + quoted + `): (?:` + quoted +
	`|namespaceObject\.metadata\.(?:labels|annotations)\[` + quoted + `\])\}\}\}(?: : Object\{\})?$`)

const quoted = `"(?:[^"\\]|\\.)*"`

// writtenKeys are the label and annotation keys the policy's mutations apply.
func writtenKeys(p *admissionregistrationv1.MutatingAdmissionPolicy) ([]string, error) {
	var keys []string
	for i, m := range p.Spec.Mutations {
		if m.PatchType != admissionregistrationv1.PatchTypeApplyConfiguration || m.ApplyConfiguration == nil {
			return nil, fmt.Errorf("mutation %d is not an apply configuration metawatch writes", i)
		}
		found := keyInMutation.FindStringSubmatch(m.ApplyConfiguration.Expression)
		if found == nil {
			return nil, fmt.Errorf("mutation %d does not set one label or annotation as metawatch writes it", i)
		}
		key, err := strconv.Unquote(found[2])
		if err != nil {
			return nil, fmt.Errorf("mutation %d: %w", i, err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// scopeTerm finds the namespaces a write-scope term lists: `NS in [...]`,
// negated for an exclusion (scopeCEL).
var scopeTerm = regexp.MustCompile(`(!\()?` + regexp.QuoteMeta(requestNamespace) + ` in \[([^\]]*)\]\)?`)

// writeScopes are the scopes the policy's write-scope condition combines
// (each term a scope of its own, all of which must allow a namespace).
func writeScopes(p *admissionregistrationv1.MutatingAdmissionPolicy) ([]config.WriteScope, error) {
	var expr string
	found := false
	for _, c := range p.Spec.MatchConditions {
		if c.Name == "write-scope" {
			expr, found = c.Expression, true
		}
	}
	switch {
	case !found:
		return nil, nil // written before there were write scopes: every namespace
	case expr == "true":
		return nil, nil
	}
	body, ok := strings.CutPrefix(expr, requestNamespace+` == "" || (`)
	if !ok || !strings.HasSuffix(body, ")") {
		return nil, errors.New("its write-scope condition is not one metawatch writes")
	}
	body = strings.TrimSuffix(body, ")")
	// The terms are joined by " && ", which requestNamespace holds too: each
	// match must start where the previous one's " && " ends.
	var scopes []config.WriteScope
	rest := body
	for i, m := range scopeTerm.FindAllStringSubmatchIndex(body, -1) {
		sep := ""
		if i > 0 {
			sep = " && "
		}
		if body[len(body)-len(rest):m[0]] != sep {
			break
		}
		names, err := unquoteList(body[m[4]:m[5]])
		if err != nil {
			return nil, err
		}
		if m[2] >= 0 {
			scopes = append(scopes, config.WriteScope{ExcludeNamespaces: names})
		} else {
			scopes = append(scopes, config.WriteScope{Namespaces: names})
		}
		rest = body[m[1]:]
	}
	if rest != "" || len(scopes) == 0 {
		return nil, errors.New("its write-scope condition is not one metawatch writes")
	}
	return scopes, nil
}

func unquoteList(list string) ([]string, error) {
	var out []string
	for item := range strings.SplitSeq(list, ", ") {
		s, err := strconv.Unquote(item)
		if err != nil {
			return nil, fmt.Errorf("its write-scope condition lists %s, not a namespace name", item)
		}
		out = append(out, s)
	}
	return out, nil
}

// Judge returns why the limits no longer allow what the policy writes, or
// nil if they do. mapper tells the kinds of its resources.
func Judge(limits *config.Guardrails, mapper meta.RESTMapper, p *admissionregistrationv1.MutatingAdmissionPolicy) error {
	if !limits.AtCreation {
		return errors.New("--allow-at-creation is off")
	}
	var errs []error
	if p.Spec.MatchConstraints == nil || len(p.Spec.MatchConstraints.ResourceRules) == 0 {
		errs = append(errs, errors.New("it matches no resource metawatch names"))
	} else {
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			errs = append(errs, judgeResources(limits, mapper, r.Rule))
		}
	}
	keys, err := writtenKeys(p)
	errs = append(errs, err)
	for _, k := range keys {
		errs = append(errs, limits.KeyError(k))
	}
	scopes, err := writeScopes(p)
	if err == nil {
		err = limits.WithinScope(scopes)
	}
	return errors.Join(append(errs, err)...)
}

func judgeResources(limits *config.Guardrails, mapper meta.RESTMapper, r admissionregistrationv1.Rule) error {
	var errs []error
	for _, group := range r.APIGroups {
		for _, version := range r.APIVersions {
			for _, resource := range r.Resources {
				gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
				kind, err := mapper.KindFor(gvr)
				if err != nil {
					errs = append(errs, fmt.Errorf("its resource %s is not one the API server maps to a kind: %w", gvr, err))
					continue
				}
				mapping, err := mapper.RESTMapping(kind.GroupKind(), kind.Version)
				if err != nil {
					errs = append(errs, fmt.Errorf("the scope of %s: %w", kind.Kind, err))
					continue
				}
				errs = append(errs, limits.KindError(kind.GroupKind(), mapping.Scope.Name() == meta.RESTScopeNameNamespace))
			}
		}
	}
	return errors.Join(errs...)
}
