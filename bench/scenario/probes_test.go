package scenario

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A window far shorter than the probe's interval, as a bare client's
// fan-out of a few dozen pods is, still holds one request of each probe.
func TestTickSendsOnceAtStartEvenInAShortWindow(t *testing.T) {
	for name, window := range map[string]time.Duration{
		"a window already over when the probe starts": 0,
		"a window of a millisecond":                   time.Millisecond,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), window)
			defer cancel()
			if window == 0 {
				cancel()
			}
			var sent atomic.Int32
			var wg sync.WaitGroup
			tick(ctx, &wg, time.Hour, func(context.Context) { sent.Add(1) })
			wg.Wait()
			if got := sent.Load(); got != 1 {
				t.Errorf("%d requests sent, want 1: the one at start", got)
			}
		})
	}
}
