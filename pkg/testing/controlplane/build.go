package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Binaries are the paths of a built, version-checked set of control-plane binaries.
type Binaries struct {
	Dir           string
	KubeAPIServer string
	Etcd          string
	Kubectl       string
}

// CacheDir is where the binaries of KubernetesVersion live:
// $METAWATCH_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/metawatch, then /controlplane/<version>.
func CacheDir() (string, error) {
	if selected.err != nil {
		return "", selected.err
	}
	root := os.Getenv("METAWATCH_CACHE_DIR")
	if root == "" {
		userCache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding a cache directory (set METAWATCH_CACHE_DIR): %w", err)
		}
		root = filepath.Join(userCache, "metawatch")
	}
	return filepath.Join(root, "controlplane", KubernetesVersion), nil
}

// EnsureBinaries returns the cached binaries, building whichever are missing or
// invalid. Progress goes to log (what is being built, elapsed time).
func EnsureBinaries(ctx context.Context, log io.Writer) (Binaries, error) {
	dir, err := ensureInCache(ctx, log, artifacts()...)
	if err != nil {
		return Binaries{}, err
	}
	return Binaries{
		Dir:           dir,
		KubeAPIServer: filepath.Join(dir, "kube-apiserver"),
		Etcd:          filepath.Join(dir, "etcd"),
		Kubectl:       filepath.Join(dir, "kubectl"),
	}, nil
}

// EnsureNodeBinaries returns the directory of kubelet, kube-scheduler,
// kube-controller-manager and kube-proxy, next to the control plane's
// binaries, building whichever are missing (once, cached by version).
func EnsureNodeBinaries(ctx context.Context, log io.Writer) (string, error) {
	return ensureInCache(ctx, log, nodeArtifacts()...)
}

// EnsureControllerManager returns the path of kube-controller-manager, the
// node binaries' own copy (same directory and name), building it alone if it
// is missing: the tests that run it need no kubelet, scheduler or proxy.
func EnsureControllerManager(ctx context.Context, log io.Writer) (string, error) {
	a := kubernetesCommand("kube-controller-manager")
	dir, err := ensureInCache(ctx, log, a)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, a.name), nil
}

// ensureInCache builds whichever of as are missing into CacheDir, under its
// lock, and returns the directory.
func ensureInCache(ctx context.Context, log io.Writer, as ...artifact) (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating cache directory: %w", err)
	}
	unlock, err := LockDir(ctx, nil, dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	for _, a := range as {
		if err := ensure(ctx, dir, a, log); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func ensure(ctx context.Context, dir string, a artifact, log io.Writer) error {
	path := filepath.Join(dir, a.name)
	if valid(ctx, path, a) {
		return nil
	}
	fmt.Fprintf(log, "controlplane: building %s %s into %s (once, minutes on two cores; later runs reuse it)\n",
		a.name, versionOf(a), dir)
	start := time.Now()
	stop := reportProgress(log, a.name, start)
	err := build(ctx, dir, path, a)
	stop()
	if err != nil {
		return fmt.Errorf("building %s: %w", a.name, err)
	}
	if len(a.versionArgs) == 0 {
		if err := os.WriteFile(path+".version", []byte(a.versionWant), 0o644); err != nil {
			return err
		}
	}
	if !valid(ctx, path, a) {
		return fmt.Errorf("built %s, but `%s %s` does not report %q", a.name, path, strings.Join(a.versionArgs, " "), a.versionWant)
	}
	fmt.Fprintf(log, "controlplane: built %s in %s\n", a.name, time.Since(start).Round(time.Second))
	return nil
}

func versionOf(a artifact) string {
	if a.version != "" {
		return a.version
	}
	switch a.name {
	case "etcd":
		return EtcdVersion
	case "helm":
		return HelmVersion
	case "kwok":
		return KwokVersion
	}
	return KubernetesVersion
}

// valid reports whether path is an executable that reports the expected
// version, or for a program that has no way to say its version, whether the
// stamp written next to it after its build names the expected one.
func valid(ctx context.Context, path string, a artifact) bool {
	if len(a.versionArgs) == 0 {
		stamp, err := os.ReadFile(path + ".version")
		_, statErr := os.Stat(path)
		return err == nil && statErr == nil && string(stamp) == a.versionWant
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, a.versionArgs...).CombinedOutput()
	return err == nil && strings.Contains(string(out), a.versionWant)
}

// build compiles into a temporary name next to path and renames it into place,
// so an interrupted build never leaves a half-written binary at path.
func build(ctx context.Context, dir, path string, a artifact) error {
	moduleDir, err := a.module.prepare(ctx, filepath.Join(dir, "src"))
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d", a.name, os.Getpid()))
	defer os.Remove(tmp)
	args := []string{"build", "-o", tmp}
	if a.ldflags != "" {
		args = append(args, "-ldflags", a.ldflags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, a.pkg)...)
	cmd.Dir = moduleDir
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod"), a.env...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", a.pkg, err, tail(output.String(), 4000))
	}
	return os.Rename(tmp, path)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// reportProgress prints the elapsed time every 30s until the returned func is called.
func reportProgress(log io.Writer, what string, start time.Time) (stop func()) {
	done := make(chan struct{})
	go func() {
		ticker := time.NewTicker(30 * time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				fmt.Fprintf(log, "controlplane: still building %s (%s elapsed)\n", what, time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done) }
}

// LockDir takes an exclusive flock on dir/.lock, so that concurrent
// processes (test binaries, a make kind and a bench) build what dir holds
// once. While another process holds it, it waits, saying so once to log if
// log is not nil, until ctx ends.
func LockDir(ctx context.Context, log io.Writer, dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening build lock: %w", err)
	}
	for said := false; ; said = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("taking build lock %s: %w", f.Name(), err)
		}
		if !said && log != nil {
			fmt.Fprintf(log, "controlplane: another process holds %s; waiting for it to finish\n", f.Name())
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
