package child

import (
	"errors"
	"fmt"
	"time"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/variant"
)

// relistWatch is the child's side of the relist scenario
// (bench/scenarios/relist): told the relist is coming (relist-begin), it
// resets its peak resident set, lets a variant that would stop at its
// watch's end open it again, and follows its live heap (writing a heap
// profile at each new most, with --heap-profiles) until the relist is over
// (relist-end).
type relistWatch struct {
	o          Config
	v          variant.Variant
	running    *variant.Running
	peak       *probe.LiveHeapPeak
	profileErr error
}

func (w *relistWatch) begin() error {
	if w.running.ExpectRelist != nil {
		w.running.ExpectRelist()
	}
	if err := probe.ResetPeakRSS("self"); err != nil {
		return fmt.Errorf("resetting the peak resident set: %w", err)
	}
	w.peak = probe.WatchLiveHeap(100*time.Millisecond, func(uint64) { w.profileErr = w.o.writeHeapProfile(w.v, "relist-peak") })
	return nil
}

// end stops following the live heap and returns the most it saw, and the
// memory at the most resident set it read.
func (w *relistWatch) end() (uint64, *MemoryAt, error) {
	if w.peak == nil {
		return 0, nil, errors.New("relist-end before relist-begin")
	}
	most := w.peak.Stop()
	at := atMostRSS(w.peak)
	w.peak = nil
	return most, &at, w.profileErr
}
