package probe

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// sink keeps an allocation reachable from a global, so the GC counts it live.
var sink []byte

func TestWatchLiveHeapKeepsThePeakAfterItIsFreed(t *testing.T) {
	const held = 64 << 20
	peaks := make(chan uint64, 1000)
	watch := WatchLiveHeap(time.Millisecond, func(live uint64) { peaks <- live })
	sink = make([]byte, held)
	runtime.GC()
	var calls []uint64
	for deadline := time.After(10 * time.Second); len(calls) == 0 || calls[len(calls)-1] < held; {
		select {
		case live := <-peaks:
			calls = append(calls, live)
		case <-deadline:
			t.Fatalf("onPeak was called with %v, never with the %d B held", calls, held)
		}
	}
	sink = nil
	runtime.GC()
	most := watch.Stop()
	if most < held {
		t.Fatalf("most live heap %d B, want at least the %d B held before it was freed", most, held)
	}
	if now := LiveHeap(); now >= held {
		t.Fatalf("live heap after freeing is %d B, want below %d B: the test did not free what it held", now, held)
	}
	close(peaks)
	for live := range peaks {
		calls = append(calls, live)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i] <= calls[i-1] {
			t.Fatalf("onPeak was called with %v: each call must be a new most", calls)
		}
	}
}

func TestMemoryClassesAccountForTheLiveHeap(t *testing.T) {
	sink = make([]byte, 32<<20)
	runtime.GC()
	classes := MemoryClasses()
	sink = nil
	if classes[LiveHeapMetric] < 32<<20 || classes[HeapObjectsClass] < 32<<20 {
		t.Errorf("live heap %d B, heap objects %d B: want both at least the 32 MiB held",
			classes[LiveHeapMetric], classes[HeapObjectsClass])
	}
	var parts uint64
	for name, v := range classes {
		if strings.HasPrefix(name, memoryClassPrefix) && name != TotalClass {
			parts += v
		}
	}
	if total := classes[TotalClass]; parts != total {
		t.Errorf("the classes add up to %d B, want the total the runtime gives, %d B", parts, total)
	}
}

func TestWatchLiveHeapSplitsTheMostResidentSetItRead(t *testing.T) {
	const held = 64 << 20
	watch := WatchLiveHeap(time.Millisecond, nil)
	before := RSS()
	sink = make([]byte, held)
	for i := range sink {
		sink[i] = 1 // touched, so resident
	}
	deadline := time.Now().Add(10 * time.Second)
	for rss, _ := watch.AtMostRSS(); rss < before+held/2 && time.Now().Before(deadline); rss, _ = watch.AtMostRSS() {
		time.Sleep(time.Millisecond)
	}
	sink = nil
	watch.Stop()
	rss, classes := watch.AtMostRSS()
	if rss < before+held/2 {
		t.Fatalf("most resident set read %d B, want at least %d B: the %d B held were not read", rss, before+held/2, held)
	}
	if classes[HeapObjectsClass] < held {
		t.Errorf("heap objects at the most resident set %d B, want at least the %d B held then", classes[HeapObjectsClass], held)
	}
}
