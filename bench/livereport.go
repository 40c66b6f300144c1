package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/bench/variant"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// liveReport is the report scenario: metawatch check --live --report with
// the metawatch variant's configuration (and any --report-binaries), then
// its baseline, kubectl get -o yaml of the same pods, up to
// --report-kubectl-max-pods; each timed, with its peak RSS.
func (h *harness) liveReport(ctx context.Context, n int) error {
	bin, conf, remove, err := buildMetawatch(variant.ReportConfig(h.spec()))
	if err != nil {
		return err
	}
	defer remove()
	tools := []namedBinary{{name: "metawatch", path: bin}}
	tools = append(tools, h.o.reportBinaries...)
	type run struct {
		tool string
		args []string
	}
	var runs []run
	for _, t := range tools {
		runs = append(runs, run{t.name, []string{t.path, "check", "-f", conf, "--live", "--report", "--kubeconfig", h.kubeconfig}})
	}
	if limit := h.o.reportKubectlMaxPods; limit == 0 || n <= limit {
		kubectl, err := kubectlPath(ctx)
		if err != nil {
			return err
		}
		runs = append(runs, run{"kubectl", []string{kubectl, "--kubeconfig", h.kubeconfig, "get", "pods", "-A", "-l", seed.Selector, "-o", "yaml"}})
	}
	for _, c := range runs {
		fmt.Fprintf(os.Stderr, "bench: %d pods: live report, %s\n", n, c.tool)
		r, err := timed(ctx, c.args)
		if err != nil {
			return fmt.Errorf("%s: %w", c.tool, err)
		}
		r.Pods, r.Tool = n, c.tool
		h.run.LiveReports = append(h.run.LiveReports, r)
	}
	return nil
}

// buildMetawatch builds the metawatch binary, as users run it, and writes
// config beside it (config.yaml): the report and failover scenarios give
// the metawatch variant's configuration with a rule that copies from owners
// too (variant.ReportConfig), the fanout scenario the variant's own.
func buildMetawatch(config string) (bin, conf string, remove func(), err error) {
	bin, remove, err = testkit.Build("github.com/metawatch/metawatch/cmd/metawatch", "metawatch")
	if err != nil {
		return "", "", nil, err
	}
	conf = filepath.Join(filepath.Dir(bin), "config.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		remove()
		return "", "", nil, err
	}
	return bin, conf, remove, nil
}

// timed runs args with its output discarded, and measures it. Its peak RSS
// is the program's VmHWM, read every peakPoll while it runs: not getrusage's
// maxrss, which for a child Go starts with vfork counts the harness's
// resident set at exec (the harness holding 100k pods' figures made every
// report look 496 MiB).
func timed(ctx context.Context, args []string) (report.LiveReport, error) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return report.LiveReport{}, err
	}
	defer func() { _ = devNull.Close() }()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = devNull, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return report.LiveReport{}, err
	}
	peak := watchPeakRSS(cmd.Process.Pid)
	err = cmd.Wait()
	took := time.Since(start)
	r := report.LiveReport{Seconds: took.Seconds(), ExitCode: cmd.ProcessState.ExitCode(), PeakRSSBytes: peak()}
	if exit := (*exec.ExitError)(nil); err != nil && !errors.As(err, &exit) {
		return r, err
	}
	if r.ExitCode == 1 || r.ExitCode == 2 {
		return r, fmt.Errorf("exit code %d", r.ExitCode)
	}
	return r, nil
}

// peakPoll is how often a timed program's peak RSS is read.
const peakPoll = 20 * time.Millisecond

// watchPeakRSS reads process pid's VmHWM (the kernel's high-water mark of
// its resident set since its exec) until it ends; stop returns the last
// read, VmHWM being monotonic. Call stop once the process has been waited
// for (its /proc entry is then gone, and the loop ends).
func watchPeakRSS(pid int) (stop func() int64) {
	id := strconv.Itoa(pid)
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			hwm := probe.PeakRSSOf(id)
			if hwm == 0 {
				return // exited (or reaped)
			}
			peak.Store(max(peak.Load(), hwm))
			time.Sleep(peakPoll)
		}
	}()
	return func() int64 {
		<-done
		return peak.Load()
	}
}

// kubectlPath is kubectl from PATH, else the control plane's.
func kubectlPath(ctx context.Context) (string, error) {
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p, nil
	}
	b, err := controlplane.EnsureBinaries(ctx, os.Stderr)
	return b.Kubectl, err
}
