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
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// runRecord is what a make kind has started and made, kept in a file while
// it runs: the next make kind removes what one that was killed (kill -9, a
// crash, the machine switched off) left behind, its dockerd, its cluster and
// kind's network, before it starts.
type runRecord struct {
	// Dockerd is the dockerd this run started, if it did.
	Dockerd     *processID `json:"dockerd,omitempty"`
	Cluster     string     `json:"cluster,omitempty"`
	Kubeconfig  string     `json:"kubeconfig,omitempty"`
	MadeNetwork bool       `json:"madeNetwork,omitempty"`
}

// processID names a process so that a pid given to another process since
// (after a reboot, or a restart of the machine's own dockerd) is not taken
// for it: the boot, the pid and the time it started after that boot.
type processID struct {
	Boot  string `json:"boot"`
	PID   int    `json:"pid"`
	Start string `json:"start"`
}

// recordPath is where the record is kept: one per machine, as the lock and
// the engine's store are, and lasting as the store does (a machine switched
// off leaves its cluster there). A variable for the tests.
var recordPath = "/var/lib/metawatch/make-kind-run.json"

// save writes the record, synced: it is read after a crash.
func (r runRecord) save() error {
	if err := os.MkdirAll(filepath.Dir(recordPath), 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return controlplane.WriteFileAtomic(recordPath, data, 0o644)
}

// readRecord reads the record a make kind left, nil if there is none.
func readRecord() (*runRecord, error) {
	data, err := os.ReadFile(recordPath)
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
	if err := os.Remove(recordPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// removeWhatAKilledRunLeft removes, when an earlier make kind left a record,
// the cluster and network it made and the dockerd it started: with that
// dockerd if it still runs, else on the engine running or one started for
// the clean-up (recorded too, and stopped after).
func removeWhatAKilledRunLeft(ctx context.Context, log *os.File, kind, logDir string) error {
	r, err := readRecord()
	if err != nil {
		return fmt.Errorf("%s, the record of an earlier make kind, cannot be read (%w): check nothing of it is left (docker ps -a, kind get clusters), then remove it", recordPath, err)
	}
	if r == nil {
		return nil
	}
	fmt.Fprintf(log, "kind: an earlier make kind did not end cleanly (killed?): removing what it left (%s)\n", r)
	leftDockerd := r.Dockerd != nil && r.Dockerd.isRunningDockerd()
	if r.Cluster != "" {
		var engine *kindnode.Engine
		if !leftDockerd {
			engine, err = kindnode.StartEngine(ctx, log, filepath.Join(logDir, "leftovers"), func(pid int) error {
				r.Dockerd = identify(pid)
				return r.save()
			})
			if err != nil {
				return err
			}
		}
		c := cluster{kind: kind, name: r.Cluster, kubeconfig: r.Kubeconfig, creating: true, madeNetwork: r.MadeNetwork}
		err = c.cleanUp(log)
		engine.Stop(log)
	}
	if leftDockerd {
		err = errors.Join(err, stopDockerd(log, r.Dockerd.PID))
	}
	if err != nil {
		return fmt.Errorf("removing what an earlier make kind left (recorded in %s): %w", recordPath, err)
	}
	return removeRecord()
}

func (r runRecord) String() string {
	var parts []string
	if r.Cluster != "" {
		parts = append(parts, "cluster "+r.Cluster)
	}
	if r.Dockerd != nil {
		parts = append(parts, "the dockerd it started, pid "+strconv.Itoa(r.Dockerd.PID))
	}
	if len(parts) == 0 {
		return "nothing made yet"
	}
	return strings.Join(parts, ", ")
}

// identify names the running process pid; nil if it cannot be read.
func identify(pid int) *processID {
	start, _, ok := startAndState(pid)
	if !ok {
		return nil
	}
	return &processID{Boot: bootID(), PID: pid, Start: start}
}

// isRunningDockerd reports whether p still runs and is a dockerd: the same
// boot, a process of that pid started at the same time, named dockerd and
// not a zombie.
func (p *processID) isRunningDockerd() bool {
	if p.Boot != bootID() {
		return false
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "dockerd" {
		return false
	}
	start, state, ok := startAndState(p.PID)
	return ok && start == p.Start && state != "Z"
}

// startAndState are a process's start time (in clock ticks after boot) and
// state, from /proc/PID/stat.
func startAndState(pid int) (start, state string, ok bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", false
	}
	// The fields after the command's closing parenthesis: state is the
	// first (field 3), starttime the 20th (field 22).
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return "", "", false
	}
	return fields[19], fields[0], true
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// stopDockerd stops a dockerd this process did not start: SIGTERM, then
// SIGKILL after 30 s.
func stopDockerd(log *os.File, pid int) error {
	p := identify(pid)
	if p == nil {
		return nil // gone already
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(30 * time.Second); p.isRunningDockerd(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			time.Sleep(time.Second)
			if p.isRunningDockerd() {
				return fmt.Errorf("the dockerd left running (pid %d) does not stop", pid)
			}
			break
		}
	}
	fmt.Fprintf(log, "kind: stopped the dockerd left running (pid %d)\n", pid)
	return nil
}
