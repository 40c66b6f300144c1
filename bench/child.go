package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/bench/variant"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// The child protocol: the child prints one JSON synced line once its caches
// are synced and its initial reconciles done, then one JSON snapshot line
// per line it reads on stdin, and exits at end of input.

// synced is the child's first line.
type synced struct {
	Objects                     int
	SyncSeconds, SyncCPUSeconds float64
	// ReadySeconds is from the process's start to synced caches: what
	// metawatch's readiness probe waits for, startup (clients, discovery) included.
	ReadySeconds  float64
	RetainedBytes int64
	// PeakLiveHeapBytes is the most heap a GC found reachable during the
	// sync and the initial reconciles (probe.WatchLiveHeap).
	PeakLiveHeapBytes uint64
	// AtPeak is the most resident set read during the sync and the runtime's
	// account of its memory at that moment (probe.LiveHeapPeak.AtMostRSS).
	AtPeak             memoryAt
	AllocatedBytes     uint64
	ReceivedBytes      map[string]int64
	Events, Reconciles int64
}

// snapshot is what the child counted so far.
type snapshot struct {
	Events, Reconciles int64
	Requests, Bytes    map[string]int64
	CPUSeconds         float64
	PeakRSSBytes       int64
	RSSBytes           int64 // resident now (VmRSS)
	// Mallocs, AllocatedBytes and GCCycles are the Go runtime's counts so far.
	Mallocs, AllocatedBytes uint64
	GCCycles                uint32
	// Memory is the Go runtime's account of its memory (probe.MemoryClasses).
	Memory map[string]uint64 `json:",omitempty"`
	// PodUIDs are the cached pods' uids, when asked for ("uids"): last, as a
	// million of them would weigh on any memory figure taken after.
	PodUIDs []string `json:",omitempty"`
	// Relists are the relists of the pods the variant counted itself, where
	// it can tell (variant.Running.Relists).
	Relists *int64 `json:",omitempty"`
	// RelistPeakLiveHeapBytes is the most live heap from relist-begin, in
	// the answer to relist-end.
	RelistPeakLiveHeapBytes uint64 `json:",omitempty"`
	// RelistAtPeak is as synced.AtPeak, for the relist, in the answer to
	// relist-end.
	RelistAtPeak *memoryAt `json:",omitempty"`
}

// memoryAt is a resident set read and the Go runtime's account of its
// memory just after (probe.MemoryClasses).
type memoryAt struct {
	RSSBytes int64
	Memory   map[string]uint64 `json:",omitempty"`
}

func atMostRSS(p *probe.LiveHeapPeak) memoryAt {
	rss, classes := p.AtMostRSS()
	return memoryAt{RSSBytes: rss, Memory: classes}
}

// processStarted is about when this process started: package variables are
// set before main runs, a few milliseconds after exec.
var processStarted = time.Now()

// settleTimeout bounds the wait for a controller's initial reconciles.
const settleTimeout = 10 * time.Minute

func runChild(ctx context.Context, o options) error {
	if o.heapProfiles != "" {
		runtime.MemProfileRate = 1 // every allocation: a profile of what each pod costs, not a sample
	}
	v, err := variant.Named(o.child)
	if err != nil {
		return err
	}
	cfg, err := childConfig()
	if err != nil {
		return err
	}
	wire, counters := probe.NewWire(), &variant.Counters{}
	spec := variant.Spec{Selector: seed.Selector, Label: costCenter, Concurrency: o.concurrency}
	if spec.Shard, err = parseShard(o.shard, o.shardServerSide); err != nil {
		return err
	}
	running, err := v.Start(ctx, wire.Wrap(cfg), spec, counters)
	if err != nil {
		return fmt.Errorf("starting %s: %w", v.Name, err)
	}
	s, err := measureSync(ctx, o, v, running, counters, wire)
	if err != nil {
		return err
	}
	if err := writeHeapProfile(o, v, "synced"); err != nil {
		return err
	}
	if err := json.NewEncoder(os.Stdout).Encode(s); err != nil {
		return err
	}
	return serveSnapshots(ctx, os.Stdin, running, counters, wire, &relistWatch{o: o, v: v, running: running})
}

// parseShard reads --shard I/N; "" is not sharded.
func parseShard(s string, serverSide bool) (*variant.Shard, error) {
	if s == "" {
		return nil, nil
	}
	var shard variant.Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &shard.Index, &shard.Of); err != nil || shard.Index < 0 || shard.Index >= shard.Of {
		return nil, fmt.Errorf("--shard %q: want I/N with 0 <= I < N", s)
	}
	shard.ServerSide = serverSide
	return &shard, nil
}

func childConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", controlplane.ExternalKubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0 // every variant unthrottled: the API server is what they are measured against
	return cfg, nil
}

// measureSync starts the variant and measures it until its caches are synced
// (time, allocations) and its initial reconciles are done (retained heap).
func measureSync(ctx context.Context, o options, v variant.Variant, running *variant.Running, counters *variant.Counters, wire *probe.Wire) (synced, error) {
	before, cpu := probe.HeapAfterGC(), probe.CPUSeconds()
	start := time.Now()
	var profileErr error
	peak := probe.WatchLiveHeap(100*time.Millisecond, func(uint64) { profileErr = writeHeapProfile(o, v, "peak") })
	running.Run()
	if err := running.WaitSynced(ctx); err != nil {
		peak.Stop()
		return synced{}, err
	}
	s := synced{SyncSeconds: time.Since(start).Seconds(), SyncCPUSeconds: probe.CPUSeconds() - cpu, AllocatedBytes: totalAlloc() - before.TotalAlloc,
		ReadySeconds: time.Since(processStarted).Seconds()}
	n, err := running.CachedPods(ctx)
	if err != nil {
		return synced{}, err
	}
	if !v.CacheOnly {
		settle(ctx, counters, n)
	}
	s.PeakLiveHeapBytes, s.AtPeak = peak.Stop(), atMostRSS(peak)
	if profileErr != nil {
		return synced{}, profileErr
	}
	after := probe.SettledHeap(5)
	s.Objects, s.RetainedBytes = n, int64(after.HeapAlloc)-int64(before.HeapAlloc)
	s.ReceivedBytes, s.Events, s.Reconciles = wire.Bytes(), counters.Received(), counters.Reconciles()
	return s, nil
}

// settle waits until the variant has been handed every cached pod (events)
// and then made no reconcile for two seconds: the initial reconciles are done
// and its queue is empty when the heap is measured. Not every variant
// reconciles every pod: metawatch queues only pods that need work.
func settle(ctx context.Context, counters *variant.Counters, pods int) {
	deadline := time.Now().Add(settleTimeout)
	last, quietSince := int64(-1), time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n := counters.Reconciles()
		if n != last {
			last, quietSince = n, time.Now()
		} else if counters.Received() >= int64(pods) && time.Since(quietSince) > 2*time.Second {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serveSnapshots answers every line with a snapshot; a line "profile FILE"
// first starts a CPU profile into FILE, a line "stop-profile" first ends it,
// a line "uids" adds the cached pods' uids to it, "relist-begin" and
// "relist-end" begin and end the relist scenario's watch (relistWatch).
func serveSnapshots(ctx context.Context, in io.Reader, running *variant.Running, counters *variant.Counters, wire *probe.Wire, relist *relistWatch) error {
	lines := bufio.NewScanner(in)
	var profile *os.File
	for lines.Scan() {
		var err error
		var uids []string
		var relistPeak uint64
		var relistAt *memoryAt
		switch line := lines.Text(); {
		case line == "relist-begin":
			err = relist.begin()
		case line == "relist-end":
			relistPeak, relistAt, err = relist.end()
		case line == "uids":
			if uids, err = running.CachedPodUIDs(ctx); err != nil {
				return fmt.Errorf("cached pods' uids: %w", err)
			}
		case strings.HasPrefix(line, "profile "):
			if profile, err = os.Create(strings.TrimPrefix(line, "profile ")); err == nil {
				err = pprof.StartCPUProfile(profile)
			}
			err = cpuProfileErr(err)
		case line == "stop-profile" && profile != nil:
			pprof.StopCPUProfile()
			err, profile = cpuProfileErr(profile.Close()), nil
		}
		if err != nil {
			return err
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		s := snapshot{Events: counters.Received(), Reconciles: counters.Reconciles(), Requests: wire.Requests(), Bytes: wire.Bytes(),
			CPUSeconds: probe.CPUSeconds(), PeakRSSBytes: probe.PeakRSS(), RSSBytes: probe.RSS(), Mallocs: m.Mallocs, AllocatedBytes: m.TotalAlloc, GCCycles: m.NumGC,
			Memory: probe.MemoryClasses(), PodUIDs: uids, RelistPeakLiveHeapBytes: relistPeak, RelistAtPeak: relistAt}
		if running.Relists != nil {
			relists := running.Relists()
			s.Relists = &relists
		}
		if err := json.NewEncoder(os.Stdout).Encode(s); err != nil {
			return err
		}
	}
	return lines.Err()
}

// child is the harness's handle on a variant's process.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

func startChild(ctx context.Context, o options, kubeconfig, name string, n int, extra ...string) (*child, synced, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, synced{}, err
	}
	cmd := exec.CommandContext(ctx, self, append([]string{"--child", name, "--kubeconfig", kubeconfig, "--concurrency", fmt.Sprint(o.concurrency),
		"--heap-profiles", o.heapProfiles, "--sizes", fmt.Sprint(n)}, extra...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, synced{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, synced{}, err
	}
	if err := cmd.Start(); err != nil {
		return nil, synced{}, err
	}
	c := &child{cmd: cmd, in: in, out: json.NewDecoder(out)}
	var s synced
	if err := c.out.Decode(&s); err != nil {
		return nil, synced{}, c.failed("sync", err)
	}
	return c, s, nil
}

// snapshot asks the child for its counters.
func (c *child) snapshot() (snapshot, error) { return c.ask("") }

// podUIDs asks the child for the uids of the pods it caches.
func (c *child) podUIDs() ([]string, error) {
	s, err := c.ask("uids")
	return s.PodUIDs, err
}

// profile starts a CPU profile of the child into path (stopProfile ends it) and takes a snapshot.
func (c *child) profile(path string) (snapshot, error) { return c.ask("profile " + path) }

func (c *child) stopProfile() (snapshot, error) { return c.ask("stop-profile") }

// ask sends the child a line and reads the snapshot it answers with.
func (c *child) ask(line string) (snapshot, error) {
	var s snapshot
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		return s, c.failed("snapshot", err)
	}
	if err := c.out.Decode(&s); err != nil {
		return s, c.failed("snapshot", err)
	}
	return s, nil
}

// measured is a running variant the harness takes snapshots of: a child
// process, or the chart's pods (deployed).
type measured interface {
	snapshot() (snapshot, error)
	// stop takes a last snapshot and ends the variant.
	stop() (snapshot, error)
}

// quietSnapshot is a snapshot taken once the variant has seen no new event
// for a second (or after 30 s): the events the harness caused have reached
// it, whose watch may lag behind the harness's own.
func quietSnapshot(c measured) (snapshot, error) {
	s, err := c.snapshot()
	for deadline := time.Now().Add(30 * time.Second); err == nil && time.Now().Before(deadline); {
		time.Sleep(time.Second)
		var next snapshot
		if next, err = c.snapshot(); err == nil && next.Events == s.Events && next.Reconciles == s.Reconciles {
			return next, nil
		}
		s = next
	}
	return s, err
}

// stop takes a last snapshot and ends the child.
func (c *child) stop() (snapshot, error) {
	s, err := c.snapshot()
	_ = c.in.Close()
	if waitErr := c.cmd.Wait(); err == nil && waitErr != nil {
		err = fmt.Errorf("variant process: %w", waitErr)
	}
	return s, err
}

func (c *child) failed(during string, err error) error {
	_ = c.in.Close()
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
	return fmt.Errorf("variant process during %s: %w (its stderr is above)", during, err)
}

func cpuProfileErr(err error) error {
	if err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	return nil
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// writeHeapProfile writes the heap profile, as of the last GC, to
// DIR/VARIANT-N-WHEN.pprof when --heap-profiles is set: "synced" once the
// initial reconciles are done, "peak" (rewritten) each time the live heap
// reaches a new most during the sync.
func writeHeapProfile(o options, v variant.Variant, when string) error {
	if o.heapProfiles == "" {
		return nil
	}
	if err := os.MkdirAll(o.heapProfiles, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(o.heapProfiles, fmt.Sprintf("%s-%d-%s.pprof", v.Name, o.sizes[0], when)))
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.WriteHeapProfile(f)
}
