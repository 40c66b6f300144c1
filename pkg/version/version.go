// Package version is metawatch's version, stamped into the binary at build
// time (make build, make image: -ldflags -X from the chart's appVersion and
// git) and printed by `metawatch --version` and at start-up.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by -ldflags "-X github.com/metawatch/metawatch/pkg/version.version=... -X ...commit=...".
var (
	version = "dev"
	commit  = ""
)

// Version is the release version (the chart's appVersion), or "dev" for a
// binary built without make.
func Version() string { return version }

// Commit is the git commit the binary was built from, or "unknown".
func Commit() string {
	if commit != "" {
		return commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// String is the version line: "metawatch 0.1.0 (commit 1a2b3c4, go1.26.8)".
func String() string {
	return fmt.Sprintf("metawatch %s (commit %s, %s)", Version(), Commit(), runtime.Version())
}
