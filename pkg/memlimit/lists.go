package memlimit

import (
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// ListGCPercent is the GC percent while a list streams in: the heap may
// grow to 1.25 times what the last GC found live instead of twice. A list
// allocates about twelve bytes per byte it keeps (the decoded objects,
// the stream's buffers), so with the default GOGC a million objects' list
// peaks near twice the steady heap; with this the peak stays within a
// quarter of it, for more GC work while the list lasts (measured in
// bench/results; docs/sizing.md).
const ListGCPercent = 25

// ListLinger is how long the GC stays paced after the last list ends: a
// cache's lists end one kind at a time, and the controllers that start on
// a synced cache are handed its store a moment later; at GOGC's default in
// between, the heap could grow to twice the whole cache.
const ListLinger = 30 * time.Second

// Lists lowers the GC percent while any list streams in, and gives the
// previous one back when the last ends. The GC percent is the process's,
// so one Lists serves every informer: Begin and End count the lists under
// way, whichever kinds they are. A GC percent already at or below the
// list's, or off (GOGC=off, a memory limit alone), is left as it is.
type Lists struct {
	percent int
	linger  time.Duration
	// set is debug.SetGCPercent (tests give their own).
	set func(int) int

	mu       sync.Mutex
	underWay int
	before   int
	lowered  bool
	// giveBack, while lowered and no list is under way, gives the GC
	// percent back once the linger has passed; ends counts the lists that
	// ended, so that a timer that fired as another list began and ended
	// gives nothing back early.
	giveBack *time.Timer
	ends     uint64
}

// NewLists paces the GC at percent while lists stream in, and for linger
// after the last ends; a percent <= 0 leaves the GC as it is.
func NewLists(percent int, linger time.Duration) *Lists {
	return &Lists{percent: percent, linger: linger, set: debug.SetGCPercent}
}

// ListsFromEnv is NewLists(ListGCPercent), or nil where the operator set
// GOGC: the runtime honours that itself, and an operator who set it meant
// it, lists included.
func ListsFromEnv(gogc string) *Lists {
	if gogc != "" {
		return nil
	}
	return NewLists(ListGCPercent, ListLinger)
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
	if l.lowered { // still lingering: stay
		if l.giveBack != nil {
			l.giveBack.Stop()
		}
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
// back once the linger has passed without another Begin. An End without a
// Begin is ignored.
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
	if l.underWay > 0 || !l.lowered {
		return
	}
	if l.linger <= 0 {
		l.restore()
		return
	}
	l.ends++
	ended := l.ends
	l.giveBack = time.AfterFunc(l.linger, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.ends == ended && l.underWay == 0 && l.lowered {
			l.restore()
		}
	})
}

// restore gives the GC percent back; l.mu is held.
func (l *Lists) restore() {
	l.set(l.before)
	l.lowered = false
}
