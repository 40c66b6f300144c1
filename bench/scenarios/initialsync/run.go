package initialsync

import (
	"context"
	"time"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/scenario"
)

// Figures are the sync's figures of a variant started, from its Synced
// line: the per-pod ones over the pods it cached.
func Figures(s child.Synced) Result {
	per := func(v float64) float64 { return v / float64(max(s.Objects, 1)) }
	out := Result{Seconds: s.SyncSeconds, ReadySeconds: s.ReadySeconds, CPUSeconds: s.SyncCPUSeconds, Events: s.Events, Reconciles: s.Reconciles,
		PeakLiveHeapBytes: s.PeakLiveHeapBytes, PeakSampledRSSBytes: s.AtPeak.RSSBytes, PeakMemory: s.AtPeak.Memory,
		RetainedBytesPerObject: per(float64(s.RetainedBytes)), AllocatedBytesPerObject: per(float64(s.AllocatedBytes)),
		ReceivedBytesPerObjectByKey: map[string]float64{}}
	for key, b := range s.ReceivedBytes {
		out.ReceivedBytesPerObject += per(float64(b))
		out.ReceivedBytesPerObjectByKey[key] = per(float64(b))
	}
	return out
}

// Steady is the variant's resident set after window idle (--steady-window),
// and the Go runtime's account of it (0 and nil: no window): what it holds
// once the sync's garbage is collected and returned to the kernel, the
// figure a container's memory limit is set by.
func Steady(ctx context.Context, m child.Measured, window time.Duration) (int64, map[string]uint64, error) {
	if window <= 0 {
		return 0, nil, nil
	}
	if err := scenario.Sleep(ctx, window); err != nil {
		return 0, nil, err
	}
	s, err := m.Snapshot()
	return s.RSSBytes, s.Memory, err
}
