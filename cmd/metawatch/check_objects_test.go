package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of metawatch check --objects")

// Each example in selectors/ has sample objects in selectors/preview, whose
// header gives the command; its report (text and JSON) and exit code are
// the golden files beside them.
func TestCheckObjectsOnTheExamples(t *testing.T) {
	examples, err := filepath.Glob("../../selectors/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, example := range examples {
		name := strings.TrimSuffix(filepath.Base(example), ".yaml")
		t.Run(name, func(t *testing.T) {
			objects := filepath.Join("../../selectors/preview", name+".objects.yaml")
			args := documentedCommand(t, objects)
			for _, format := range []string{"text", "json"} {
				var out, errOut bytes.Buffer
				code := checkCommand(append(args, "-o", format), &out, &errOut)
				if errOut.Len() > 0 {
					t.Errorf("stderr: %s", errOut.String())
				}
				got := out.String() + "exit code: " + string(rune('0'+code)) + "\n"
				golden(t, filepath.Join("../../selectors/preview", name+"."+format+".golden"), got)
			}
		})
	}
}

// documentedCommand is the check command the objects file's header gives,
// with paths from the repository's root made relative to this package.
func documentedCommand(t *testing.T, objects string) []string {
	t.Helper()
	raw, err := os.ReadFile(objects)
	if err != nil {
		t.Fatalf("every example needs sample objects: %v", err)
	}
	for line := range strings.Lines(string(raw)) {
		if _, cmd, ok := strings.Cut(line, "metawatch check "); ok {
			args := strings.Fields(cmd)
			for i, a := range args {
				if strings.HasPrefix(a, "selectors/") {
					args[i] = "../../" + a
				}
			}
			return args
		}
	}
	t.Fatalf("%s: no `metawatch check` command in its header", objects)
	return nil
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/metawatch -run TestCheckObjects -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./cmd/metawatch -run TestCheckObjects -update rewrites it):\n--- got\n%s--- want\n%s", path, got, want)
	}
}
