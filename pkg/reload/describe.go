package reload

import (
	"errors"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Describe renders err with one problem per line: a configuration error
// aggregates several field errors, and users fix them one by one.
func Describe(err error) string {
	var lines []string
	collect(err, &lines)
	if len(lines) <= 1 {
		return err.Error()
	}
	return strings.Join(lines, "\n  - ")
}

func collect(err error, lines *[]string) {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) && len(agg.Errors()) > 1 {
		prefix := strings.TrimSuffix(err.Error(), agg.Error())
		*lines = append(*lines, strings.TrimSuffix(prefix, ": ")+":")
		for _, e := range agg.Errors() {
			*lines = append(*lines, e.Error())
		}
		return
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			collect(e, lines)
		}
		return
	}
	*lines = append(*lines, err.Error())
}
