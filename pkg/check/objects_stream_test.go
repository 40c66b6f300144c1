package check

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const teamConfig = "watches:\n- kind: Pod\n  fieldSelector: status.phase!=Succeeded\nrules:\n" +
	"- {name: team, kinds: [Pod], copyFromNamespace: {labels: [team]}}\n" +
	"- {name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [cost-center]}}\n"

const (
	shopPod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-1\n  namespace: shop\n" +
		"  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d, uid: u-rs, controller: true}]\nstatus: {phase: Running}\n"
	shopNamespace  = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  uid: u-ns\n  labels: {team: red, unrelated: x}\n  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}'}\n"
	shopReplicaSet = "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web-5d\n  namespace: shop\n  uid: u-rs\n" +
		"  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: u-d, controller: true}]\n"
	shopDeployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop, uid: u-d, labels: {cost-center: cc-7}}\n"
)

// Namespaces and owners may come after the objects that need them, in the
// same file, in a later one or on stdin: the objects are read twice.
func TestCheckObjectsFindsSourcesAfterTheirObjects(t *testing.T) {
	wantSet := []string{`would set label team="red" (was absent; rule team, from Namespace shop)`,
		`would set label cost-center="cc-7" (was absent; rule cost, from owner Deployment/web)`}
	cases := map[string]struct {
		files []string // "-": stdin, whose content is the next
		stdin string
		want  []string
		code  int
	}{
		"the Namespace and the owner chain after the pod, in the same file": {
			files: []string{shopPod + "---\n" + shopNamespace + "---\n" + shopReplicaSet + "---\n" + shopDeployment}, want: wantSet, code: exitWouldWrite},
		"the Namespace and the owners in a later file": {
			files: []string{shopPod, shopDeployment + "---\n" + shopReplicaSet, shopNamespace}, want: wantSet, code: exitWouldWrite},
		"on stdin, in a List whose Namespace and owners follow the pod": {
			files: []string{"-"}, stdin: "apiVersion: v1\nkind: List\nitems:\n" + asItems(shopPod, shopNamespace, shopReplicaSet, shopDeployment),
			want: wantSet, code: exitWouldWrite},
		"the Namespace missing: the pod waits": {
			files: []string{shopPod + "---\n" + shopReplicaSet + "---\n" + shopDeployment}, want: []string{"waits: Namespace shop is not among the objects"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, "config.yaml")
			writeFile(t, conf, teamConfig)
			args := []string{"-f", conf, "--objects"}
			for i, content := range tc.files {
				if content == "-" {
					args = append(args, "-")
					useStdin(t, tc.stdin)
					continue
				}
				path := filepath.Join(dir, fmt.Sprintf("objects-%d.yaml", i))
				writeFile(t, path, content)
				args = append(args, path)
			}
			var out, errOut bytes.Buffer
			code := Run(t.Context(), args, &out, &errOut)
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the report lacks %q:\n%s%s", w, out.String(), errOut.String())
				}
			}
			if code != tc.code {
				t.Errorf("exit code %d, want %d:\n%s%s", code, tc.code, out.String(), errOut.String())
			}
		})
	}
}

// An input error anywhere is found before anything is written.
func TestCheckObjectsWritesNothingBeforeAnInputError(t *testing.T) {
	dir := t.TempDir()
	conf, objects := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "objects.yaml")
	writeFile(t, conf, teamConfig)
	writeFile(t, objects, "apiVersion: v1\nkind: List\nitems:\n"+asItems(shopPod, shopNamespace, "apiVersion: v1\nkind: Pod\nmetadata: {name: on}\n"))
	var out, errOut bytes.Buffer
	code := Run(t.Context(), []string{"-f", conf, "--objects", objects}, &out, &errOut)
	want := "FAILED: --objects: " + objects + ": document 1: items[2]: a Pod whose metadata.name is true (YAML reads"
	if code != 1 || out.Len() > 0 || !strings.HasPrefix(errOut.String(), want) {
		t.Errorf("exit code %d, stdout %q, stderr %q; want 1, nothing and %q", code, out.String(), errOut.String(), want)
	}
}

// check --objects reads a List of 100,000 pods (24 MB of JSON, the
// Namespaces last) an object at a time: its heap stays far below what
// decoding the file whole takes (over 600 MB, as it did before).
func TestCheckObjectsMemoryDoesNotGrowWithTheInput(t *testing.T) {
	const pods, bound = 100_000, 64 << 20
	dir := t.TempDir()
	conf, objects := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "pods.json")
	writeFile(t, conf, teamConfig)
	writePodList(t, objects, pods)
	peak := heapPeak(t, func() {
		code := Run(t.Context(), []string{"-f", conf, "--objects", objects, "-o", "json"}, io.Discard, os.Stderr)
		if code != exitWouldWrite {
			t.Errorf("exit code %d, want %d", code, exitWouldWrite)
		}
	})
	t.Logf("heap in use at most %d MiB for %d pods", peak>>20, pods)
	if peak > bound {
		t.Errorf("heap in use reached %d MiB for %d pods, want under %d MiB: check --objects keeps what it reads", peak>>20, pods, bound>>20)
	}
}

// heapPeak is the most heap in use while f runs (sampled; after a GC
// before it starts).
func heapPeak(t *testing.T, f func()) uint64 {
	t.Helper()
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	<-sampled
	return peak.Load()
}

// writePodList writes a List of n small pods in 100 namespaces, as kubectl
// get -o json writes it, with the Namespaces after the pods.
func writePodList(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprint(w, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n")
	for i := range n {
		fmt.Fprintf(w, `        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-%d", "namespace": "ns-%d", "uid": "u-%d", "labels": {"app": "web"}}, `+
			`"spec": {"containers": [{"name": "c", "image": "nginx"}]}, "status": {"phase": "Running"}},`+"\n", i, i%100, i)
	}
	for i := range 100 {
		fmt.Fprintf(w, `        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns-%d", "uid": "ns-u-%d", "labels": {"team": "t-%d"}}}%s`+"\n",
			i, i, i, map[bool]string{true: ",", false: ""}[i < 99])
	}
	fmt.Fprint(w, "    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// asItems are the YAML documents as the items of a block sequence.
func asItems(docs ...string) string {
	var b strings.Builder
	for _, d := range docs {
		for i, line := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
			prefix := "  "
			if i == 0 {
				prefix = "- "
			}
			b.WriteString(prefix + line + "\n")
		}
	}
	return b.String()
}

// useStdin makes content the process's stdin for the test.
func useStdin(t *testing.T, content string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stdin")
	writeFile(t, path, content)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdin
	os.Stdin = f
	t.Cleanup(func() { os.Stdin = saved; _ = f.Close() })
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
