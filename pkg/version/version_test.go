package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestStringNamesVersionCommitAndGo(t *testing.T) {
	tests := map[string]struct {
		version, commit string
		want            string
	}{
		"a binary built by make says its release and commit": {version: "0.1.0", commit: "1a2b3c4", want: "metawatch 0.1.0 (commit 1a2b3c4, "},
		"a binary built with go build says dev":              {version: "dev", commit: "", want: "metawatch dev (commit "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			defer func(v, c string) { version, commit = v, c }(version, commit)
			version, commit = tc.version, tc.commit
			got := String()
			if !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, runtime.Version()+")") {
				t.Errorf("String() = %q, want prefix %q and the Go version", got, tc.want)
			}
		})
	}
}
