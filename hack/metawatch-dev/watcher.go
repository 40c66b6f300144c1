package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// runWatcher runs metawatch in the foreground until it exits or ctx ends, when
// it gets SIGTERM and time to shut down gracefully.
func runWatcher(ctx context.Context, bin string, args []string) error {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Its own process group: Ctrl-C reaches only this process, which forwards
	// one SIGTERM (a second signal makes controller-runtime exit at once).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s (run `make build` first): %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitError(err)
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-done: //nolint:errcheck // stopped as asked: its exit status says nothing more
	case <-time.After(40 * time.Second):
		_ = cmd.Process.Kill()
		<-done //nolint:errcheck // killed: its exit status ("signal: killed") says nothing more
	}
	return nil
}

func exitError(err error) error {
	if err != nil {
		return fmt.Errorf("metawatch exited: %w", err)
	}
	return nil
}
