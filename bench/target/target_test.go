package target

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/hack/kindnode"
)

// Without a running container engine (as on CI machines here), the kind
// target fails at once and says how to get one and what to use instead.
func TestKindFailsFastWithoutAnEngine(t *testing.T) {
	if kindnode.EngineAnswers(t.Context()) {
		t.Skip("a container engine is running: a real cluster would be created")
	}
	_, err := Open(t.Context(), "metawatch-bench-test")
	if err == nil || !strings.Contains(err.Error(), "--kind needs") || !strings.Contains(err.Error(), "make kind") || !strings.Contains(err.Error(), "--kubeconfig") {
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
