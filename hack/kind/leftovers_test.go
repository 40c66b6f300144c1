package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The record of what a make kind made is read back as written, and is gone
// once removed (a second removal is not an error).
func TestRunRecordRoundTrip(t *testing.T) {
	t.Setenv("METAWATCH_CACHE_DIR", t.TempDir())
	want := runRecord{DockerdPID: 4242, Cluster: "metawatch-bench", Kubeconfig: "/x/bin/kind/metawatch-bench.kubeconfig", MadeNetwork: true}
	if err := want.save(); err != nil {
		t.Fatal(err)
	}
	got, err := readRecord()
	if err != nil || got == nil || *got != want {
		t.Fatalf("read back %+v, %v; want %+v", got, err, want)
	}
	for range 2 {
		if err := removeRecord(); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := readRecord(); err != nil || got != nil {
		t.Errorf("after removal: %+v, %v; want no record", got, err)
	}
}

// Only a live process named dockerd is taken for the dockerd a killed make
// kind left: not another program, not one that has exited (a zombie not yet
// reaped included), so the next make kind never stops what is not its own.
func TestIsRunningDockerd(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep here")
	}
	fake := filepath.Join(t.TempDir(), "dockerd")
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, data, 0o755); err != nil {
		t.Fatal(err)
	}
	other := exec.Command(sleep, "60")
	named := exec.Command(fake, "60")
	for _, cmd := range []*exec.Cmd{other, named} {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	if isRunningDockerd(other.Process.Pid) {
		t.Error("a sleep was taken for a dockerd")
	}
	if !isRunningDockerd(named.Process.Pid) {
		t.Error("a running process named dockerd was not taken for one")
	}
	_ = named.Process.Signal(syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond) // exited, not reaped: a zombie
	if isRunningDockerd(named.Process.Pid) {
		t.Error("an exited dockerd (a zombie) was taken for a running one")
	}
}
