package config

import "errors"

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
