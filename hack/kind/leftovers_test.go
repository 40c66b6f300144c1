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
	old := recordPath
	recordPath = filepath.Join(t.TempDir(), "var", "make-kind-run.json")
	t.Cleanup(func() { recordPath = old })
	want := runRecord{Dockerd: &processID{Boot: "b", PID: 4242, Start: "123"}, Cluster: "metawatch-bench",
		Kubeconfig: "/x/bin/kind/metawatch-bench.kubeconfig", MadeNetwork: true}
	if err := want.save(); err != nil {
		t.Fatal(err)
	}
	got, err := readRecord()
	if err != nil || got == nil || got.String() != want.String() || *got.Dockerd != *want.Dockerd || got.Kubeconfig != want.Kubeconfig || !got.MadeNetwork {
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

// Only the live dockerd that was recorded is taken for the dockerd a killed
// make kind left: not another program, not one that has exited (a zombie
// not yet reaped included), not another process given its pid since (another
// start time, another boot), so the next make kind never stops what is not
// its own.
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
	if identify(other.Process.Pid).isRunningDockerd() {
		t.Error("a sleep was taken for a dockerd")
	}
	p := identify(named.Process.Pid)
	if !p.isRunningDockerd() {
		t.Error("the running process named dockerd that was recorded was not taken for it")
	}
	for name, changed := range map[string]processID{
		"another start time": {Boot: p.Boot, PID: p.PID, Start: p.Start + "0"},
		"another boot":       {Boot: "another", PID: p.PID, Start: p.Start},
	} {
		if changed.isRunningDockerd() {
			t.Errorf("a dockerd of %s was taken for the one recorded", name)
		}
	}
	_ = named.Process.Signal(syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond) // exited, not reaped: a zombie
	if p.isRunningDockerd() {
		t.Error("an exited dockerd (a zombie) was taken for a running one")
	}
}
