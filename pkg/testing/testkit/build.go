package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build compiles the command in directory pkg (e.g. "." or "../../cmd/metawatch")
// into a temporary directory, for tests that run the real binary. remove
// deletes it.
func Build(pkg, name string) (path string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "metawatch-test-bin-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", path, pkg).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building %s: %w\n%s", pkg, err, out)
	}
	return path, func() { os.RemoveAll(dir) }, nil
}
