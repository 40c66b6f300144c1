package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/metawatch/metawatch/hack/kindnode"
)

// runRecord is what a make kind has started and made, kept in a file while
// it runs: the next make kind removes what one that was killed (kill -9, a
// crash, the machine switched off) left behind, its dockerd, its cluster and
// kind's network, before it starts.
type runRecord struct {
	DockerdPID  int    `json:"dockerdPid,omitempty"`
	Cluster     string `json:"cluster,omitempty"`
	Kubeconfig  string `json:"kubeconfig,omitempty"`
	MadeNetwork bool   `json:"madeNetwork,omitempty"`
}

// recordPath is where the record is kept: the cache directory, which lasts
// as the engine's store does (a machine switched off leaves its cluster there).
func recordPath() (string, error) {
	dir, err := kindnode.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "make-kind-run.json"), nil
}

func (r runRecord) save() error {
	path, err := recordPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readRecord reads the record a make kind left, nil if there is none.
func readRecord() (*runRecord, error) {
	path, err := recordPath()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r runRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func removeRecord() error {
	path, err := recordPath()
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// removeWhatAKilledRunLeft removes, when an earlier make kind left a record,
// the cluster and network it made and the dockerd it started: with that
// dockerd if it still runs, else on the engine running or one started for it.
func removeWhatAKilledRunLeft(ctx context.Context, log *os.File, kind, logDir string) error {
	path, err := recordPath()
	if err != nil {
		return err
	}
	rec, err := readRecord()
	if err != nil {
		fmt.Fprintf(log, "kind: ignoring %s, which cannot be read: %v\n", path, err)
		return removeRecord()
	}
	if rec == nil {
		return nil
	}
	r := *rec
	fmt.Fprintf(log, "kind: an earlier make kind did not end cleanly (killed?): removing what it left (%s)\n", r)
	leftDockerd := r.DockerdPID != 0 && isRunningDockerd(r.DockerdPID)
	var engine *kindnode.Engine
	if !leftDockerd {
		if engine, err = kindnode.StartEngine(ctx, log, logDir); err != nil {
			return err
		}
	}
	if r.Cluster != "" {
		c := cluster{kind: kind, name: r.Cluster, kubeconfig: r.Kubeconfig, creating: true, madeNetwork: r.MadeNetwork}
		err = c.cleanUp(log)
	}
	engine.Stop(log)
	if leftDockerd {
		err = errors.Join(err, stopDockerd(log, r.DockerdPID))
	}
	if err != nil {
		return fmt.Errorf("removing what an earlier make kind left (recorded in %s): %w", path, err)
	}
	return removeRecord()
}

func (r runRecord) String() string {
	var parts []string
	if r.Cluster != "" {
		parts = append(parts, "cluster "+r.Cluster)
	}
	if r.DockerdPID != 0 {
		parts = append(parts, "the dockerd it started, pid "+strconv.Itoa(r.DockerdPID))
	}
	if len(parts) == 0 {
		return "nothing made yet"
	}
	return strings.Join(parts, ", ")
}

// isRunningDockerd reports whether pid is a live dockerd (not a zombie, not
// a number given to another program since).
func isRunningDockerd(pid int) bool {
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "dockerd" {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// stopDockerd stops a dockerd this process did not start: SIGTERM, then
// SIGKILL after 30 s.
func stopDockerd(log *os.File, pid int) error {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(30 * time.Second); isRunningDockerd(pid); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			time.Sleep(time.Second)
			if isRunningDockerd(pid) {
				return fmt.Errorf("the dockerd left running (pid %d) does not stop", pid)
			}
			break
		}
	}
	fmt.Fprintf(log, "kindnode: stopped the dockerd left running (pid %d)\n", pid)
	return nil
}
