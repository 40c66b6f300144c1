package scenario

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/metawatch/metawatch/pkg/testing/loopback"
)

// Replica is a metawatch process of the failover or fanout scenario: the
// binary, as users run it.
type Replica struct {
	cmd     *exec.Cmd
	probe   string
	started time.Time
	done    chan error
}

// StartReplica runs bin with args and a probe address of its own, for the
// scenario named purpose, its log in a temporary file (named if it fails).
func StartReplica(ctx context.Context, purpose, bin string, args []string) (*Replica, error) {
	addr, err := loopback.FreeAddress()
	if err != nil {
		return nil, err
	}
	log, err := os.CreateTemp("", "metawatch-bench-"+purpose+"-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "--health-probe-bind-address", addr)...)
	cmd.Stdout, cmd.Stderr = log, log
	r := &Replica{cmd: cmd, probe: addr, started: time.Now(), done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { r.done <- cmd.Wait(); _ = log.Close() }()
	fmt.Fprintf(os.Stderr, "bench: %s: metawatch pid %d, log %s\n", purpose, cmd.Process.Pid, log.Name())
	return r, nil
}

// WaitReady polls the replica's /readyz until it answers 200 and returns
// how long after its start that was.
func (r *Replica) WaitReady(ctx context.Context, timeout time.Duration) (float64, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-r.done:
			r.done <- err
			return 0, fmt.Errorf("exited before it was Ready: %w", err)
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + r.probe + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(r.started).Seconds(), nil
			}
		}
	}
	return 0, fmt.Errorf("not Ready after %s", timeout)
}

// Pid is the replica's process id.
func (r *Replica) Pid() int { return r.cmd.Process.Pid }

// Kill sends the replica SIGKILL: a leader's death, with no time to hand
// its Lease over.
func (r *Replica) Kill() error { return r.cmd.Process.Signal(syscall.SIGKILL) }

// Stop ends the replica (SIGTERM, then SIGKILL after 30 s) unless it has.
func (r *Replica) Stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		r.done <- err
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		err := <-r.done
		r.done <- err
	}
}
