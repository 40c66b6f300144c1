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
// headroom: only the first is cut by a lower GOGC. It also keeps the
// runtime's account of its memory (MemoryClasses) at the most resident set
// it read, so that a peak is split by what made it (objects, garbage, free
// heap not yet returned) at its moment, not only after.
type LiveHeapPeak struct {
	stop chan struct{}
	done sync.WaitGroup
	most uint64

	mu              sync.Mutex
	mostRSS         int64
	memoryAtMostRSS map[string]uint64
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
	if rss := RSS(); rss > p.mostRSS {
		classes := MemoryClasses()
		p.mu.Lock()
		p.mostRSS, p.memoryAtMostRSS = rss, classes
		p.mu.Unlock()
	}
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

// AtMostRSS is the most resident set read so far, in bytes, and the
// runtime's account of its memory read just after it (nil before the first
// reading). The kernel's high-water mark (PeakRSS) may be above it: it is
// read every interval, not at every page.
func (p *LiveHeapPeak) AtMostRSS() (int64, map[string]uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mostRSS, p.memoryAtMostRSS
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
