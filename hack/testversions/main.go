// Command testversions is `make test-versions`: for each Kubernetes version
// it builds the local control plane (kube-apiserver, etcd, kubectl,
// kube-controller-manager; once, cached by version like the default one),
// runs the suites that talk to an API server against it, and reports per
// version what passed, failed and was skipped, and why. The table is printed
// at the end and written to <out>/<date>.md.
//
// Each version runs in processes of its own: pkg/testing/controlplane reads
// the version (METAWATCH_KUBERNETES_VERSION) once, when it starts.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// defaultVersions are the newest patch of each minor the module proxy serves.
const defaultVersions = "v1.34.4,v1.35.4,v1.36.3,v1.37.2"

// defaultSuites are the packages whose tests talk to an API server.
const defaultSuites = "./cmd/metawatch,./pkg/check,./pkg/rulecontroller,./pkg/reload,./pkg/admission,./pkg/sharding,./pkg/metamanager,./pkg/metacache,./pkg/wire"

type options struct {
	versions, suites []string
	out, run         string
	timeout          time.Duration
	buildOnly        bool
	// fromOutput: the table from the go test -json files a run left in out.
	fromOutput bool
}

func main() {
	var o options
	versions := flag.String("versions", defaultVersions, "the Kubernetes versions, comma-separated (v1.<minor>.<patch>)")
	suites := flag.String("suites", defaultSuites, "the packages to test on each version, comma-separated")
	flag.StringVar(&o.out, "out", "bin/test-versions", "where the report <date>.md and each run's go test output go")
	flag.StringVar(&o.run, "run", "", "go test -run for every suite (empty: every test)")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Minute, "go test -timeout of each version's run")
	flag.BoolVar(&o.buildOnly, "build-only", false, "build each version's binaries and stop")
	flag.BoolVar(&o.fromOutput, "from-output", false, "build and test nothing: the table from the <version>.json files an earlier run left in --out")
	flag.Parse()
	o.versions, o.suites = splitList(*versions), splitList(*suites)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runAll(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "test-versions: %v\n", err)
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func runAll(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	builder := filepath.Join(o.out, "controlplane-builder")
	if o.fromOutput {
		builder = ""
	} else if err := goCommand(ctx, nil, os.Stderr, "build", "-o", builder, "./hack/controlplane"); err != nil {
		return fmt.Errorf("building hack/controlplane: %w", err)
	}
	start := time.Now()
	rep := report{Date: start.UTC(), Suites: o.suites}
	for _, v := range o.versions {
		run := runVersion
		if o.fromOutput {
			run = readVersion
		}
		res := run(ctx, o, builder, v)
		rep.Versions = append(rep.Versions, res)
		if ctx.Err() != nil {
			break
		}
	}
	rep.Took = time.Since(start)
	text := rep.markdown()
	fmt.Print("\n" + text)
	path := filepath.Join(o.out, rep.Date.Format("2006-01-02T15-04-05")+".md")
	if err := controlplane.WriteFileAtomic(path, []byte(text), 0o644); err != nil {
		return err
	}
	fmt.Printf("\ntest-versions: written to %s\n", path)
	if !rep.allPassed() {
		return fmt.Errorf("a version did not pass every suite (see %s)", path)
	}
	return nil
}

// runVersion builds a version's binaries, then runs the suites on them.
func runVersion(ctx context.Context, o options, builder, version string) versionResult {
	res := versionResult{Version: version}
	env := []string{controlplane.VersionEnv + "=" + version}
	fmt.Fprintf(os.Stderr, "test-versions: %s: building (or finding in the cache) its control plane\n", version)
	begin := time.Now()
	cmd := exec.CommandContext(ctx, builder)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	err := cmd.Run()
	res.Build = time.Since(begin)
	if err != nil {
		res.Err = fmt.Sprintf("building the control plane: %v", err)
		return res
	}
	if o.buildOnly {
		return res
	}
	logPath := filepath.Join(o.out, version+".json")
	log, err := os.Create(logPath)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer log.Close()
	args := []string{"test", "-json", "-race", "-count=1", "-p", "1", "-timeout", o.timeout.String()}
	if o.run != "" {
		args = append(args, "-run", o.run)
	}
	args = append(args, o.suites...)
	fmt.Fprintf(os.Stderr, "test-versions: %s: go %s (output in %s)\n", version, strings.Join(args, " "), logPath)
	begin = time.Now()
	collector := newCollector(os.Stderr)
	err = goCommand(ctx, env, multiWriter(log, collector), args...)
	res.Tests = time.Since(begin)
	res.Packages = collector.packages()
	if err != nil && !collector.anyFailed() {
		res.Err = fmt.Sprintf("go test: %v", err) // a build failure, a timeout: no test said why
	}
	return res
}

// readVersion is runVersion from the go test -json output an earlier run
// left: no build, no test, no times.
func readVersion(_ context.Context, o options, _, version string) versionResult {
	res := versionResult{Version: version}
	data, err := os.ReadFile(filepath.Join(o.out, version+".json"))
	if err != nil {
		res.Err = fmt.Sprintf("no output of an earlier run: %v", err)
		return res
	}
	collector := newCollector(io.Discard)
	_, _ = collector.Write(data)
	res.Packages = collector.packages()
	return res
}

// goCommand runs go with this environment plus env, its output to out.
func goCommand(ctx context.Context, env []string, out interface{ Write([]byte) (int, error) }, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	return cmd.Run()
}
