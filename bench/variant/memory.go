package variant

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/memlimit"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/wire"
)

// gcByLimitBytes is the soft memory limit of metawatch-gc-by-limit: a
// quarter of the chart's default memory limit, far above what metawatch holds
// at the bench's sizes, so the GC almost never runs.
const gcByLimitBytes = 256 << 20

// metawatchGCByLimit shows what GC pacing by a memory limit alone saves per
// event, and what it costs in memory (peak RSS).
func metawatchGCByLimit() Variant {
	return Variant{Name: "metawatch-gc-by-limit", Description: "metawatch with GOGC=off and GOMEMLIMIT=256MiB: the GC runs only as the heap nears the limit",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			debug.SetGCPercent(-1)
			debug.SetMemoryLimit(gcByLimitBytes)
			return startMetawatch(ctx, cfg, spec, counters, defaultOptions())
		}}
}

// metawatchMemoryLimit is metawatch with the soft memory limit
// --container-memory-limit=containerLimit sets, by the binary's own
// arithmetic (memlimit), named metawatch-limitLIMIT (lower case): what
// such a limit costs in sync time and CPU, and that the process stays
// within it. 256Mi was the goal for the steady RSS at 300k pods; 1Gi is the
// chart's default. The bench runs no container, so it shows what the soft
// limit does to the process, not whether a real container of that size
// would survive its sync's peak (at 300k, 256Mi would not:
// bench/results/2026-11-22-300k).
func metawatchMemoryLimit(containerLimit string) Variant {
	return Variant{Name: "metawatch-limit" + strings.ToLower(containerLimit),
		Description: fmt.Sprintf("metawatch with --container-memory-limit=%s: the GC paced by GOGC and a soft limit of 90%% of %s", containerLimit, containerLimit),
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			limit, err := memlimit.FromContainer(containerLimit, "")
			if err != nil {
				return nil, err
			}
			debug.SetMemoryLimit(limit)
			return startMetawatch(ctx, cfg, spec, counters, defaultOptions())
		}}
}

// peakGoalLimit is the container memory limit of metawatch-limit850mi: at
// a million pods metawatch held about 540 MiB steady, and the soft limit
// this sets (90%, 765 MiB) plus the binary's own pages outside the Go heap
// (about 45 MiB) is 1.5 times that. Whether a limit sized so holds the
// sync's peak there, and what the GC's extra work costs the sync.
const peakGoalLimit = "850Mi"

// metawatchListsAtGOGC is metawatch whose GC stays at GOGC while its lists
// stream in (memlimit.ProcessLists nil, as where GOGC is set): the before of
// pacing the GC tighter during lists, in the same run.
func metawatchListsAtGOGC() Variant {
	return Variant{Name: "metawatch-lists-at-gogc", Description: "metawatch with the GC at GOGC (100) while lists stream in too, not at the lists' 25",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			memlimit.ProcessLists = nil // each variant runs in a process of its own
			return startMetawatch(ctx, cfg, spec, counters, defaultOptions())
		}}
}

// lowGOGC is metawatch-gogc50's GC percent, for the whole run.
const lowGOGC = 50

// metawatchGOGC is metawatch with GOGC=percent from its start to its end:
// the heap may grow to (1 + percent/100) times what the last GC found live
// instead of twice. Where the sync's peak is room the GC leaves, not data
// held (the most live heap says which), this is what brings it down, at
// the price of more collections.
func metawatchGOGC(percent int) Variant {
	return Variant{Name: fmt.Sprintf("metawatch-gogc%d", percent), Description: fmt.Sprintf("metawatch with GOGC=%d for the whole run", percent),
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			debug.SetGCPercent(percent)
			memlimit.ProcessLists = nil // as with GOGC set in the environment: lists too
			return startMetawatch(ctx, cfg, spec, counters, defaultOptions())
		}}
}

// metawatchFreeAfterSync is metawatch returning the sync's garbage to the
// kernel at once (debug.FreeOSMemory) when its caches are synced, instead
// of the background scavenger's pace: whether the steady resident set
// then comes down to the heap metawatch keeps.
func metawatchFreeAfterSync() Variant {
	return Variant{Name: "metawatch-free-after-sync", Description: "metawatch returning freed memory to the kernel at once (debug.FreeOSMemory) when its caches are synced",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			running, err := startMetawatch(ctx, cfg, spec, counters, defaultOptions())
			if err != nil {
				return nil, err
			}
			afterSync(running, func(err error) {
				if err == nil {
					debug.FreeOSMemory()
				}
			})
			return running, nil
		}}
}

// metawatchNoCompression is metawatch asking the API server not to gzip its
// responses (rest.Config.DisableCompression): what the watch stream's
// compression, which the firehose's CPU profile shows on both sides, costs
// per event and in the API server's CPU, against the bytes it saves.
func metawatchNoCompression() Variant {
	return Variant{Name: "metawatch-no-compression", Description: "metawatch with its client's compression off: watch events and lists sent uncompressed",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			cfg = rest.CopyConfig(cfg)
			cfg.DisableCompression = true
			return startMetawatch(ctx, cfg, spec, counters, defaultOptions())
		}}
}

// afterSync has running call then, with WaitSynced's error, once its
// caches are synced (or could not be).
func afterSync(running *Running, then func(error)) {
	waitSynced := running.WaitSynced
	running.WaitSynced = func(ctx context.Context) error {
		err := waitSynced(ctx)
		then(err)
		return err
	}
}

// defaultOptions are the Manager's options as metawatch runs by default.
func defaultOptions() metamanager.Options {
	return metamanager.Options{Wire: wire.Options{BookmarkInterval: wire.DefaultBookmarkInterval}}
}
