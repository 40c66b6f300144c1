package child

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
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

// Synced is the child's first line.
type Synced struct {
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
	AtPeak             MemoryAt
	AllocatedBytes     uint64
	ReceivedBytes      map[string]int64
	Events, Reconciles int64
}

// Snapshot is what the child counted so far.
type Snapshot struct {
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
	// RelistAtPeak is as Synced.AtPeak, for the relist, in the answer to
	// relist-end.
	RelistAtPeak *MemoryAt `json:",omitempty"`
}

// MemoryAt is a resident set read and the Go runtime's account of its
// memory just after (probe.MemoryClasses).
type MemoryAt struct {
	RSSBytes int64
	Memory   map[string]uint64 `json:",omitempty"`
}

func atMostRSS(p *probe.LiveHeapPeak) MemoryAt {
	rss, classes := p.AtMostRSS()
	return MemoryAt{RSSBytes: rss, Memory: classes}
}

// processStarted is about when this process started: package variables are
// set before main runs, a few milliseconds after exec.
var processStarted = time.Now()

// SettleTimeout bounds the wait for a controller's initial reconciles.
const SettleTimeout = 10 * time.Minute

// Config is what the harness tells its child on the command line (Start).
type Config struct {
	// Variant is the variant the child runs (--child).
	Variant     string
	Concurrency int
	// HeapProfiles is a directory for the variant's heap profiles ("": none).
	HeapProfiles string
	// Pods is the size the child runs at (--sizes), in its profiles' names.
	Pods int
	// Shard is "I/N" for sharded replica I of N ("": not sharded), and
	// ShardServerSide whether it asks the API server to filter.
	Shard           string
	ShardServerSide bool
	// Label is the label the rule copies from the namespace to its pods.
	Label string
}

// Serve is the child: it starts the variant, measures its sync, prints
// Synced, and answers every line of stdin with a Snapshot until its end.
func Serve(ctx context.Context, o Config) error {
	if o.HeapProfiles != "" {
		runtime.MemProfileRate = 1 // every allocation: a profile of what each pod costs, not a sample
	}
	v, err := variant.Named(o.Variant)
	if err != nil {
		return err
	}
	cfg, err := childConfig()
	if err != nil {
		return err
	}
	wire, counters := probe.NewWire(), &variant.Counters{}
	spec := variant.Spec{Selector: seed.Selector, Label: o.Label, Concurrency: o.Concurrency}
	if spec.Shard, err = parseShard(o.Shard, o.ShardServerSide); err != nil {
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
	if err := o.writeHeapProfile(v, "synced"); err != nil {
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
func measureSync(ctx context.Context, o Config, v variant.Variant, running *variant.Running, counters *variant.Counters, wire *probe.Wire) (Synced, error) {
	before, cpu := probe.HeapAfterGC(), probe.CPUSeconds()
	start := time.Now()
	var profileErr error
	peak := probe.WatchLiveHeap(100*time.Millisecond, func(uint64) { profileErr = o.writeHeapProfile(v, "peak") })
	running.Run()
	if err := running.WaitSynced(ctx); err != nil {
		peak.Stop()
		return Synced{}, err
	}
	s := Synced{SyncSeconds: time.Since(start).Seconds(), SyncCPUSeconds: probe.CPUSeconds() - cpu, AllocatedBytes: totalAlloc() - before.TotalAlloc,
		ReadySeconds: time.Since(processStarted).Seconds()}
	n, err := running.CachedPods(ctx)
	if err != nil {
		return Synced{}, err
	}
	if !v.CacheOnly {
		settle(ctx, counters, n)
	}
	s.PeakLiveHeapBytes, s.AtPeak = peak.Stop(), atMostRSS(peak)
	if profileErr != nil {
		return Synced{}, profileErr
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
	deadline := time.Now().Add(SettleTimeout)
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
		var relistAt *MemoryAt
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
		s := Snapshot{Events: counters.Received(), Reconciles: counters.Reconciles(), Requests: wire.Requests(), Bytes: wire.Bytes(),
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
func (o Config) writeHeapProfile(v variant.Variant, when string) error {
	if o.HeapProfiles == "" {
		return nil
	}
	if err := os.MkdirAll(o.HeapProfiles, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(o.HeapProfiles, fmt.Sprintf("%s-%d-%s.pprof", v.Name, o.Pods, when)))
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.WriteHeapProfile(f)
}
