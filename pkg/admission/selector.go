package admission

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/metawatch/metawatch/pkg/config"
)

// objectLabels is the created object's labels in CEL, empty when it has none
// (a match condition may not use the policy's variables).
const objectLabels = "(has(object.metadata.labels) ? object.metadata.labels : {})"

// selectorCEL is sel as a CEL expression on the created object's labels,
// true where sel matches them; "true" for an empty selector.
func selectorCEL(sel labels.Selector) (string, error) {
	reqs, selectable := sel.Requirements()
	if !selectable || len(reqs) == 0 {
		return "true", nil
	}
	terms := make([]string, 0, len(reqs))
	for _, r := range reqs {
		term, err := requirementCEL(r)
		if err != nil {
			return "", err
		}
		terms = append(terms, term)
	}
	return strings.Join(terms, " && "), nil
}

func requirementCEL(r labels.Requirement) (string, error) {
	key := quote(r.Key())
	has := key + " in " + objectLabels
	value := objectLabels + "[" + key + "]"
	values := sorted(r.Values().UnsortedList())
	list := listCEL(values)
	switch r.Operator() {
	case selection.Exists:
		return has, nil
	case selection.DoesNotExist:
		return "!(" + has + ")", nil
	case selection.Equals, selection.DoubleEquals:
		return "(" + has + " && " + value + " == " + quote(values[0]) + ")", nil
	case selection.NotEquals:
		return "(!(" + has + ") || " + value + " != " + quote(values[0]) + ")", nil
	case selection.In:
		return "(" + has + " && " + value + " in " + list + ")", nil
	case selection.NotIn:
		return "(!(" + has + ") || !(" + value + " in " + list + "))", nil
	}
	return "", fmt.Errorf("the label selector operator %q has no admission-time equivalent; use =, !=, in, notin, exists or !exists", r.Operator())
}

// quote is s as a CEL string literal: CEL's escapes are Go's.
func quote(s string) string { return strconv.Quote(s) }

// requestNamespace is the namespace a request writes in, as the write scope
// counts it: a Namespace's own name, "" for other cluster-scoped objects.
const requestNamespace = `(request.resource.group == "" && request.resource.resource == "namespaces" ? object.metadata.name : request.namespace)`

// scopeCEL is true where every scope allows the request's namespace, as
// config.WriteScope.Allows does.
func scopeCEL(scopes []*config.WriteScope) string {
	var terms []string
	for _, s := range scopes {
		if s == nil {
			continue
		}
		if len(s.Namespaces) > 0 {
			terms = append(terms, requestNamespace+" in "+listCEL(s.Namespaces))
		}
		if len(s.ExcludeNamespaces) > 0 {
			terms = append(terms, "!("+requestNamespace+" in "+listCEL(s.ExcludeNamespaces)+")")
		}
	}
	if len(terms) == 0 {
		return "true"
	}
	return requestNamespace + ` == "" || (` + strings.Join(terms, " && ") + ")"
}

// listCEL is values, sorted, as a CEL list of strings.
func listCEL(values []string) string {
	quoted := make([]string, 0, len(values))
	for _, v := range sorted(values) {
		quoted = append(quoted, quote(v))
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
