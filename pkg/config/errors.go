// Errors of the configuration: which failures are its fault (Invalid), and
// how they are shown to the user, one problem per line (Describe). The
// wording of decoding errors is in errors_yaml.go.

package config

import (
	"errors"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// invalidError marks an error as the configuration's fault: a field, a kind
// or a selector that cannot work, which editing the configuration fixes.
// Every other failure while starting a configuration (discovery, an
// unreachable or overloaded API server, a sync that took too long) is
// transient: retried, never reported as an invalid configuration.
type invalidError struct{ err error }

func (e *invalidError) Error() string { return e.err.Error() }
func (e *invalidError) Unwrap() error { return e.err }

// Invalid marks err as the configuration's fault; nil stays nil.
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return &invalidError{err: err}
}

// IsInvalid reports whether err, or an error it wraps, is the configuration's fault.
func IsInvalid(err error) bool {
	var invalid *invalidError
	return errors.As(err, &invalid)
}

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
