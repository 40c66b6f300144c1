package testkit

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
)

// WantInvalid fails t unless err is what want asks: nil for no want, else
// an invalid-configuration error (config.IsInvalid) that says each of want.
func WantInvalid(t testing.TB, err error, want ...string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("want no error, got %v", err)
		}
		return
	}
	if err == nil || !config.IsInvalid(err) {
		t.Fatalf("want an invalid-configuration error, got %v", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q:\n%s", w, config.Describe(err))
		}
	}
}
