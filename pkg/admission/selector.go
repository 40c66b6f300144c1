package admission

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
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
	values := r.Values().UnsortedList()
	sort.Strings(values)
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = quote(v)
	}
	list := "[" + strings.Join(quoted, ", ") + "]"
	switch r.Operator() {
	case selection.Exists:
		return has, nil
	case selection.DoesNotExist:
		return "!(" + has + ")", nil
	case selection.Equals, selection.DoubleEquals:
		return "(" + has + " && " + value + " == " + quoted[0] + ")", nil
	case selection.NotEquals:
		return "(!(" + has + ") || " + value + " != " + quoted[0] + ")", nil
	case selection.In:
		return "(" + has + " && " + value + " in " + list + ")", nil
	case selection.NotIn:
		return "(!(" + has + ") || !(" + value + " in " + list + "))", nil
	}
	return "", fmt.Errorf("the label selector operator %q has no admission-time equivalent; use =, !=, in, notin, exists or !exists", r.Operator())
}

// quote is s as a CEL string literal: CEL's escapes are Go's.
func quote(s string) string { return strconv.Quote(s) }
