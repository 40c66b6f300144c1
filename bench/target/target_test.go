package target

import (
	"strings"
	"testing"
)

// Without the kind CLI or a container engine (as on CI machines here), the
// kind target fails at once and says what to use instead.
func TestKindFailsFastWithoutItsTools(t *testing.T) {
	if kindAvailable(t.Context()) == nil {
		t.Skip("kind and a container engine are available: a real cluster would be created")
	}
	_, err := Open(t.Context(), "metawatch-bench-test")
	if err == nil || !strings.Contains(err.Error(), "--kind needs") || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Fatalf("Open(--kind) = %v, want an error naming what is missing and the alternatives", err)
	}
}

func TestContainsLine(t *testing.T) {
	for in, want := range map[string]bool{"a\nmetawatch-bench\n": true, "metawatch-bench-2\n": false, "": false} {
		if got := containsLine(in, "metawatch-bench"); got != want {
			t.Errorf("containsLine(%q) = %v, want %v", in, got, want)
		}
	}
}
