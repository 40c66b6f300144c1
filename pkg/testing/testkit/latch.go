package testkit

import "sync"

// latch holds whoever waits on it while paused, and lets them all go on
// resume: a network or a watch stream that stalls.
type latch struct {
	mu     sync.Mutex
	paused chan struct{} // closed on resume; nil while not paused
}

func (l *latch) pause() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paused == nil {
		l.paused = make(chan struct{})
	}
}

func (l *latch) resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paused != nil {
		close(l.paused)
		l.paused = nil
	}
}

// wait returns once the latch is not paused.
func (l *latch) wait() {
	l.mu.Lock()
	paused := l.paused
	l.mu.Unlock()
	if paused != nil {
		<-paused
	}
}

func (l *latch) isPaused() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.paused != nil
}
