package memlimit

import (
	"os"
	"runtime/debug"
	"sync"
)

// ListGCPercent is the GC percent while a list streams in: the heap may
// grow to 1.25 times what the last GC found live instead of twice. A list
// allocates many times what it keeps (each object decoded, then packed),
// so at the default GOGC the cache's peak is the GC's room, not its data;
// at this one the room is a quarter, for more GC work while the list
// lasts (docs/sizing.md and the bench's results have the figures).
const ListGCPercent = 25

// Lists lowers the GC percent while any list streams in, and gives the
// previous one back when the last ends. The GC percent is the process's,
// so one Lists serves every informer: Begin and End count the lists under
// way, whichever kinds they are. A GC percent already at or below the
// list's, or off (GOGC=off, a memory limit alone), is left as it is.
//
// When the last list ends, Lists also returns the heap the lists freed to
// the kernel at once. Left to itself, the runtime's scavenger gives it back
// only slowly, or not at all while the heap stays under its goal: after a
// list it stays resident, idle, for as long as the process runs, and the
// resident set a user reads (and a memory limit counts) is the list's, not
// the cache's. It costs one full GC per time every list has ended: at
// startup and after a relist, not per event.
type Lists struct {
	percent int
	// set is debug.SetGCPercent and free debug.FreeOSMemory (tests give
	// their own).
	set  func(int) int
	free func()

	mu       sync.Mutex
	underWay int
	before   int
	lowered  bool
	freeing  bool
}

// NewLists paces the GC at percent while lists stream in; a percent <= 0
// leaves the GC as it is.
func NewLists(percent int) *Lists {
	return &Lists{percent: percent, set: debug.SetGCPercent, free: debug.FreeOSMemory}
}

// ListsFromEnv is NewLists(ListGCPercent), or nil where the operator set
// GOGC: the runtime honours that itself, and an operator who set it meant
// it, lists included.
func ListsFromEnv(gogc string) *Lists {
	if gogc != "" {
		return nil
	}
	return NewLists(ListGCPercent)
}

// ProcessLists paces this process's GC while its caches' lists stream in
// (nil where GOGC is set). It is one for the process because the GC
// percent is: every cache's informers share it.
var ProcessLists = ListsFromEnv(os.Getenv("GOGC"))

// Begin counts a list under way; the first lowers the GC percent.
func (l *Lists) Begin() {
	if l == nil || l.percent <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.underWay++
	if l.underWay > 1 {
		return
	}
	before := l.set(l.percent)
	if before < 0 || before <= l.percent {
		l.set(before) // off, or already as low: as it was
		return
	}
	l.before, l.lowered = before, true
}

// End counts a list ended (or given up); the last gives the GC percent
// back and returns the freed heap to the kernel, in a goroutine of its own
// (a full GC, which the informer calling End need not wait for; one at a
// time). An End without a Begin is ignored.
func (l *Lists) End() {
	if l == nil || l.percent <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.underWay == 0 {
		return
	}
	l.underWay--
	if l.underWay > 0 {
		return
	}
	if l.lowered {
		l.set(l.before)
		l.lowered = false
	}
	if !l.freeing {
		l.freeing = true
		go l.returnFreed()
	}
}

func (l *Lists) returnFreed() {
	l.free()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.freeing = false
}
