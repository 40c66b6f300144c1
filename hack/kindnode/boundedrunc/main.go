// Command boundedrunc is runc for a dockerd started by hack/kindnode on a
// machine whose root lacks some capabilities: it takes out of a container's
// spec the capabilities this process's bounding set does not hold, then runs
// runc. Docker 20.10 (Debian's) gives a privileged container every
// capability there is, kind's node containers are privileged, and runc
// refuses to start a container with a capability it cannot have ("unable to
// apply caps: operation not permitted"). Where root holds every capability
// it changes nothing.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/metawatch/metawatch/hack/kindnode/capabilities"
)

func main() {
	if err := bound(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "boundedrunc: %v\n", err)
		os.Exit(1)
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		fmt.Fprintf(os.Stderr, "boundedrunc: %v\n", err)
		os.Exit(1)
	}
	err = syscall.Exec(runc, append([]string{"runc"}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "boundedrunc: exec %s: %v\n", runc, err)
	os.Exit(1)
}

// bound edits the spec a command reads: the bundle's config.json of create
// and run, the process file of exec (docker exec --privileged).
func bound(args []string) error {
	path, process := specFile(args)
	if path == "" {
		return nil
	}
	held, err := capabilities.Bounding()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		return err
	}
	proc := spec
	if !process {
		proc, _ = spec["process"].(map[string]any)
	}
	caps, _ := proc["capabilities"].(map[string]any)
	if caps == nil {
		return nil
	}
	for set, list := range caps {
		names, _ := list.([]any)
		caps[set] = slices.DeleteFunc(names, func(n any) bool { s, _ := n.(string); return !held[s] })
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// specFile is the file of args's command that holds capabilities, and
// whether it is a process spec (exec) rather than a whole one.
func specFile(args []string) (path string, process bool) {
	command, bundle, processFile := "", "", ""
	for i, a := range args {
		next := ""
		if i+1 < len(args) {
			next = args[i+1]
		}
		switch {
		case command == "" && (a == "create" || a == "run" || a == "exec"):
			command = a
		case a == "--bundle" || a == "-b":
			bundle = next
		case strings.HasPrefix(a, "--bundle="):
			bundle = strings.TrimPrefix(a, "--bundle=")
		case a == "--process" || a == "-p":
			processFile = next
		case strings.HasPrefix(a, "--process="):
			processFile = strings.TrimPrefix(a, "--process=")
		}
	}
	switch {
	case command == "exec" && processFile != "":
		return processFile, true
	case (command == "create" || command == "run") && bundle != "":
		return filepath.Join(bundle, "config.json"), false
	}
	return "", false
}
