package livereport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// Tool is a metawatch binary the scenario times, by the name the report
// gives it.
type Tool struct{ Name, Path string }

// Setup is what the scenario runs against.
type Setup struct {
	// Tools are the metawatch binaries timed, each as check -f Config
	// --live --report.
	Tools              []Tool
	Config, Kubeconfig string
	// Selector selects the pods kubectl lists.
	Selector string
	// KubectlMaxPods: the kubectl baseline runs only at sizes up to this
	// many pods (0: every size).
	KubectlMaxPods int
}

// Run is the report scenario at n pods: metawatch check --live --report of
// each tool, then its baseline, kubectl get -o yaml of the same pods, up to
// s.KubectlMaxPods; each timed, with its peak RSS. On an error it returns
// the figures of the tools that ran before.
func Run(ctx context.Context, s Setup, n int) ([]Result, error) {
	type run struct {
		tool string
		args []string
	}
	var runs []run
	for _, t := range s.Tools {
		runs = append(runs, run{t.Name, []string{t.Path, "check", "-f", s.Config, "--live", "--report", "--kubeconfig", s.Kubeconfig}})
	}
	if limit := s.KubectlMaxPods; limit == 0 || n <= limit {
		kubectl, err := kubectlPath(ctx)
		if err != nil {
			return nil, err
		}
		runs = append(runs, run{"kubectl", []string{kubectl, "--kubeconfig", s.Kubeconfig, "get", "pods", "-A", "-l", s.Selector, "-o", "yaml"}})
	}
	var out []Result
	for _, c := range runs {
		fmt.Fprintf(os.Stderr, "bench: %d pods: live report, %s\n", n, c.tool)
		r, err := timed(ctx, c.args)
		if err != nil {
			return out, fmt.Errorf("%s: %w", c.tool, err)
		}
		r.Pods, r.Tool = n, c.tool
		out = append(out, r)
	}
	return out, nil
}

// timed runs args with its output discarded, and measures it. Its peak RSS
// is the program's VmHWM, read every peakPoll while it runs: not getrusage's
// maxrss, which for a child Go starts with vfork counts the harness's
// resident set at exec (the harness holding 100k pods' figures made every
// report look 496 MiB).
func timed(ctx context.Context, args []string) (Result, error) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = devNull.Close() }()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = devNull, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	peak := watchPeakRSS(cmd.Process.Pid)
	err = cmd.Wait()
	took := time.Since(start)
	r := Result{Seconds: took.Seconds(), ExitCode: cmd.ProcessState.ExitCode(), PeakRSSBytes: peak()}
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
