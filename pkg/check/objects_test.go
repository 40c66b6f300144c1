package check

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
				code := Run(t.Context(), append(args, "-o", format), &out, &errOut)
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
		t.Fatalf("%v (go test ./pkg/check -run TestCheckObjects -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./pkg/check -run TestCheckObjects -update rewrites it):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// A usage error names what is wrong, in the flags' words.
func TestCheckUsageErrorsSayWhy(t *testing.T) {
	cases := map[string]struct {
		opts options
		args []string
		want string
	}{
		"no configuration":           {opts: options{output: "text"}, want: "-f FILE is required"},
		"live without a cluster":     {opts: options{file: "c", live: true, output: "text"}, want: "--live, --rbac and --chart-values need a cluster"},
		"an unknown output":          {opts: options{file: "c", output: "xml"}, want: "-o xml: want text, json or openreports"},
		"a valid openreports report": {opts: options{file: "c", report: true, live: true, kubeconfig: "k", output: "openreports", reportResults: 1000, fieldManager: "m"}},
		"too many results a report": {opts: options{file: "c", report: true, live: true, kubeconfig: "k", output: "openreports", reportResults: 5000},
			want: "--open-reports-max-results=5000: want 1 to 2000, the range metawatch's flag of that name takes"},
		"objects without --objects":    {opts: options{file: "c", output: "text"}, args: []string{"pods.yaml"}, want: "files of objects follow --objects"},
		"a report without --live":      {opts: options{file: "c", report: true, output: "text"}, want: "--report reads the cluster: add --live"},
		"a report and objects at once": {opts: options{file: "c", report: true, live: true, kubeconfig: "k", objects: stringList{"o"}, output: "text"}, want: "exclude each other"},
		"a valid objects check":        {opts: options{file: "c", objects: stringList{"o"}, output: "json", fieldManager: "m"}},
		"an empty field manager": {opts: options{file: "c", output: "text"},
			want: "--field-manager is empty: name the field manager this installation writes as"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.opts.usageError(tc.args)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("usageError: %q, want one with %q", got, tc.want)
			}
		})
	}
}
