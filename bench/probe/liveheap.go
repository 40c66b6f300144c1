package probe

import (
	"runtime/metrics"
	"sync"
	"time"
)

// LiveHeapMetric is the heap the last GC found reachable: what the process
// held, not the garbage the GC lets grow up to its goal between cycles.
const LiveHeapMetric = "/gc/heap/live:bytes"

// LiveHeapPeak follows the live heap as each GC finds it, from
// WatchLiveHeap until Stop, and keeps the most. Set beside the peak RSS,
// it tells a peak made of data the process holds from one made of GC
// headroom: only the first is cut by a lower GOGC.
type LiveHeapPeak struct {
	stop chan struct{}
	done sync.WaitGroup
	most uint64
}

// WatchLiveHeap reads the live heap every interval. Each time a GC has
// found more live than any before it (by more than a 50th, so a slowly
// growing heap does not call it on every reading), it calls onPeak with the
// new most, while the heap profile (as of the last GC) shows what holds it.
func WatchLiveHeap(interval time.Duration, onPeak func(live uint64)) *LiveHeapPeak {
	p := &LiveHeapPeak{stop: make(chan struct{})}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			p.read(onPeak)
			select {
			case <-p.stop:
				return
			case <-ticker.C:
			}
		}
	}()
	return p
}

func (p *LiveHeapPeak) read(onPeak func(live uint64)) {
	live := LiveHeap()
	if live <= p.most {
		return
	}
	notable := live > p.most+p.most/50
	p.most = live
	if notable && onPeak != nil {
		onPeak(live)
	}
}

// Stop ends the watch and returns the most live heap it saw, in bytes,
// a last reading included (without calling onPeak for it).
func (p *LiveHeapPeak) Stop() uint64 {
	close(p.stop)
	p.done.Wait()
	p.read(nil)
	return p.most
}

// LiveHeap is the heap the last GC found reachable, in bytes (0 before the
// first GC).
func LiveHeap() uint64 {
	sample := []metrics.Sample{{Name: LiveHeapMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
