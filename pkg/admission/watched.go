package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"
)

// watchedCEL is true where the created object is one the watch of its kind
// caches: in its namespaces, matching its label and field selectors. A key
// set on an object the controller does not see could never be released.
func watchedCEL(resources []Resource) (string, error) {
	terms := make([]string, 0, len(resources))
	narrowed := false
	for _, res := range resources {
		cond, err := cachedCEL(res)
		if err != nil {
			return "", fmt.Errorf("the %s watch: %w", res.Resource, err)
		}
		narrowed = narrowed || cond != "true"
		terms = append(terms, "("+isResource(res)+" && "+cond+")")
	}
	if !narrowed {
		return "true", nil
	}
	return strings.Join(terms, " || "), nil
}

// isResource is true where the request is for res, whatever its version
// (the policy matches equivalent versions).
func isResource(res Resource) string {
	return "request.resource.group == " + quote(res.Group) + " && request.resource.resource == " + quote(res.Resource)
}

func cachedCEL(res Resource) (string, error) {
	var terms []string
	if res.Namespaced && len(res.Namespaces) > 0 {
		terms = append(terms, "request.namespace in "+listCEL(res.Namespaces))
	}
	label, err := selectorCEL(orEverything(res.Label))
	if err != nil {
		return "", fmt.Errorf("labelSelector: %w", err)
	}
	if label != "true" {
		terms = append(terms, label)
	}
	if res.Field != nil {
		for _, req := range res.Field.Requirements() {
			term, err := fieldCEL(res, req)
			if err != nil {
				return "", err
			}
			terms = append(terms, term)
		}
	}
	if len(terms) == 0 {
		return "true", nil
	}
	return strings.Join(terms, " && "), nil
}

// fieldValues are, by resource ("": every resource), the fields
// config.FieldAtAdmission allows, as CEL with the value the object will be
// stored with.
var fieldValues = map[string]map[string]string{
	"": {
		"metadata.namespace": "request.namespace",
		"metadata.name":      "object.metadata.name",
	},
	"pods": {
		"spec.nodeName":      specField("nodeName"),
		"spec.restartPolicy": specField("restartPolicy"),
		"spec.schedulerName": specField("schedulerName"),
		"status.phase":       quote("Pending"), // the API server sets it as it stores a new pod
	},
}

func specField(name string) string {
	return "(has(object.spec." + name + ") ? object.spec." + name + ` : "")`
}

func fieldCEL(res Resource, req fields.Requirement) (string, error) {
	value, ok := fieldValues[""][req.Field]
	if !ok && res.Group == "" {
		value, ok = fieldValues[res.Resource][req.Field]
	}
	if !ok {
		return "", fmt.Errorf("fieldSelector: admission does not know %s as the watch will see it; it cannot be used with atCreation", req.Field)
	}
	switch req.Operator {
	case selection.Equals, selection.DoubleEquals:
		return "(" + value + " == " + quote(req.Value) + ")", nil
	case selection.NotEquals:
		return "(" + value + " != " + quote(req.Value) + ")", nil
	}
	return "", fmt.Errorf("fieldSelector: the operator %q on %s has no admission-time equivalent", req.Operator, req.Field)
}
