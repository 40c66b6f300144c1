package config_test

import (
	"errors"
	"fmt"
	"testing"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/metawatch/metawatch/pkg/config"
)

func TestDescribeShowsOneProblemPerLine(t *testing.T) {
	tests := map[string]struct {
		err  error
		want string
	}{
		"a single error is shown as it is": {
			err:  errors.New("watches[0].kind: Required value"),
			want: "watches[0].kind: Required value",
		},
		"an aggregate under a prefix gets one line per error": {
			err:  fmt.Errorf("invalid configuration: %w", utilerrors.NewAggregate([]error{errors.New("a: bad"), errors.New("b: bad")})),
			want: "invalid configuration:\n  - a: bad\n  - b: bad",
		},
		"joined errors are flattened": {
			err:  errors.Join(errors.New("first"), errors.New("second")),
			want: "first\n  - second",
		},
		"an aggregate of one is shown as it is": {
			err:  fmt.Errorf("invalid configuration: %w", utilerrors.NewAggregate([]error{errors.New("a: bad")})),
			want: "invalid configuration: a: bad",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := config.Describe(tc.err); got != tc.want {
				t.Errorf("Describe() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestInvalidMarksOnlyTheConfigurationsFault(t *testing.T) {
	if config.Invalid(nil) != nil {
		t.Error("Invalid(nil) is not nil")
	}
	err := fmt.Errorf("starting: %w", config.Invalid(errors.New("bad selector")))
	if !config.IsInvalid(err) || err.Error() != "starting: bad selector" {
		t.Errorf("wrapped Invalid: IsInvalid=%v, message %q", config.IsInvalid(err), err)
	}
	if config.IsInvalid(errors.New("connection refused")) {
		t.Error("an unmarked error counts as invalid")
	}
}
