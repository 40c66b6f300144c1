package rulecontroller_test

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

var cp *controlplane.ControlPlane

// logs collects every log line of the package's managers, to check what the reporter says.
var logs logLines

func TestMain(m *testing.M) {
	ctrl.SetLogger(funcr.NewJSON(logs.add, funcr.Options{Verbosity: 1}))
	eventdigest.DefaultInterval = time.Second // aggregate Events within a second, not 30
	os.Exit(controlplane.RunTests(m, &cp))
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(obj string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, obj)
}

// matching returns the lines that contain every one of parts.
func (l *logLines) matching(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if containsAll(line, parts) {
			out = append(out, line)
		}
	}
	return out
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
