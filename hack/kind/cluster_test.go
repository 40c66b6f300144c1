package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitUntilGone, with a stand-in for the kind CLI whose answers to
// `kind get clusters` the test writes, and an engine that may exit.
func TestWaitUntilGone(t *testing.T) {
	pollEvery, engineSilence = 10*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { pollEvery, engineSilence = 3*time.Second, 30*time.Second })
	for name, tc := range map[string]struct {
		answers     []string // kind's answer each time it is asked: cluster names, or "fail"
		engineExits bool
		cancel      bool
		wantErr     string // empty: returns nil
	}{
		"returns once kind no longer lists the cluster": {answers: []string{"c other", "c", "other"}},
		"returns on Ctrl-C while the cluster is up":     {answers: []string{"c"}, cancel: true},
		"waits through kind failing for a moment":       {answers: []string{"fail", "fail", "c", "other"}},
		"fails once kind has not answered for a while":  {answers: []string{"c", "fail"}, wantErr: "has not answered"},
		"fails once the dockerd it started has exited":  {answers: []string{"c"}, engineExits: true, wantErr: "has exited"},
	} {
		t.Run(name, func(t *testing.T) {
			c := cluster{kind: fakeKind(t, tc.answers), name: "c"}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			exited := make(chan struct{})
			if tc.engineExits {
				time.AfterFunc(50*time.Millisecond, func() { close(exited) })
			}
			if tc.cancel {
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			done := make(chan error, 1)
			go func() { done <- c.waitUntilGone(ctx, exited) }()
			select {
			case err := <-done:
				switch {
				case tc.wantErr == "" && err != nil:
					t.Fatalf("returned %v, want nil", err)
				case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
					t.Fatalf("returned %v, want an error saying %q", err, tc.wantErr)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("still waiting after 30s")
			}
		})
	}
}

// fakeKind is a kind CLI whose n-th `get clusters` prints answers[n] (the
// last one from then on), or fails where it says "fail".
func fakeKind(t *testing.T, answers []string) string {
	t.Helper()
	dir := t.TempDir()
	for i, a := range answers {
		if err := os.WriteFile(filepath.Join(dir, "answer"+strconv.Itoa(i)), []byte(a), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := `#!/bin/sh
d=` + dir + `
n=$(cat $d/count 2>/dev/null || echo 0)
echo $((n + 1)) > $d/count
[ -f $d/answer$n ] || n=` + strconv.Itoa(len(answers)-1) + `
a=$(cat $d/answer$n)
[ "$a" = fail ] && { echo "Cannot connect to the Docker daemon" >&2; exit 1; }
for c in $a; do echo $c; done
`
	path := filepath.Join(dir, "kind")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
