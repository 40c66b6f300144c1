package child

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// Process is the harness's handle on a variant's process.
type Process struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

// Options are the harness's settings every child is started with.
type Options struct {
	Kubeconfig   string
	Concurrency  int
	HeapProfiles string
}

// Start starts the harness's own binary as the child of variant name at n
// pods, with extra flags, and waits for its Synced line.
func Start(ctx context.Context, o Options, name string, n int, extra ...string) (*Process, Synced, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, Synced{}, err
	}
	cmd := exec.CommandContext(ctx, self, append([]string{"--child", name, "--kubeconfig", o.Kubeconfig, "--concurrency", fmt.Sprint(o.Concurrency),
		"--heap-profiles", o.HeapProfiles, "--sizes", fmt.Sprint(n)}, extra...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, Synced{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, Synced{}, err
	}
	if err := cmd.Start(); err != nil {
		return nil, Synced{}, err
	}
	c := &Process{cmd: cmd, in: in, out: json.NewDecoder(out)}
	var s Synced
	if err := c.out.Decode(&s); err != nil {
		return nil, Synced{}, c.failed("sync", err)
	}
	return c, s, nil
}

// Snapshot asks the child for its counters.
func (c *Process) Snapshot() (Snapshot, error) { return c.Ask("") }

// PodUIDs asks the child for the uids of the pods it caches.
func (c *Process) PodUIDs() ([]string, error) {
	s, err := c.Ask("uids")
	return s.PodUIDs, err
}

// Profile starts a CPU profile of the child into path (StopProfile ends it) and takes a snapshot.
func (c *Process) Profile(path string) (Snapshot, error) { return c.Ask("profile " + path) }

// StopProfile ends the CPU profile and takes a snapshot.
func (c *Process) StopProfile() (Snapshot, error) { return c.Ask("stop-profile") }

// Ask sends the child a line and reads the snapshot it answers with.
func (c *Process) Ask(line string) (Snapshot, error) {
	var s Snapshot
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		return s, c.failed("snapshot", err)
	}
	if err := c.out.Decode(&s); err != nil {
		return s, c.failed("snapshot", err)
	}
	return s, nil
}

// Measured is a running variant the harness takes snapshots of: a child
// process, or the chart's pods (the harness's deployed variant).
type Measured interface {
	Snapshot() (Snapshot, error)
	// Stop takes a last snapshot and ends the variant.
	Stop() (Snapshot, error)
}

// QuietSnapshot is a snapshot taken once the variant has seen no new event
// for a second (or after 30 s): the events the harness caused have reached
// it, whose watch may lag behind the harness's own.
func QuietSnapshot(c Measured) (Snapshot, error) {
	s, err := c.Snapshot()
	for deadline := time.Now().Add(30 * time.Second); err == nil && time.Now().Before(deadline); {
		time.Sleep(time.Second)
		var next Snapshot
		if next, err = c.Snapshot(); err == nil && next.Events == s.Events && next.Reconciles == s.Reconciles {
			return next, nil
		}
		s = next
	}
	return s, err
}

// Stop takes a last snapshot and ends the child.
func (c *Process) Stop() (Snapshot, error) {
	s, err := c.Snapshot()
	_ = c.in.Close()
	if waitErr := c.cmd.Wait(); err == nil && waitErr != nil {
		err = fmt.Errorf("variant process: %w", waitErr)
	}
	return s, err
}

func (c *Process) failed(during string, err error) error {
	_ = c.in.Close()
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
	return fmt.Errorf("variant process during %s: %w (its stderr is above)", during, err)
}
