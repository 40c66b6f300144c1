package fanout

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// writeTracer reads a metawatch replica's metrics once a second during a
// fan-out: the rate its pacer allowed, its busy workers and queue, and the
// pacer's decreases. With the pods written each second (the harness's
// watch), it tells whether the pacer or the workers set the pace.
type writeTracer struct {
	url    string
	client *http.Client

	// samples are appended by the sampling goroutine, then, once it has
	// ended, by stop.
	samples []WriteSample
	// base are the backoff counters at the start, so that a trace counts
	// only the fan-out's.
	base WriteSample
}

// newWriteTracer reads the plain-HTTP metrics endpoint at addr
// (--metrics-bind-address addr --metrics-secure=false).
func newWriteTracer(addr string) *writeTracer {
	return &writeTracer{url: "http://" + addr + "/metrics", client: &http.Client{Timeout: 2 * time.Second}}
}

// start samples once a second until the returned function is called; that
// returns the samples, one per second from start. A scrape that fails is a
// second left out: the trace is evidence, not the fan-out's result.
func (w *writeTracer) start(ctx context.Context, start time.Time) (stop func() []WriteSample) {
	if base, err := w.sample(ctx); err == nil {
		w.base = base
	}
	tickCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tickCtx.Done():
				return
			case <-tick.C:
				w.record(tickCtx, start, false)
			}
		}
	}()
	return func() []WriteSample {
		cancel()
		<-done
		w.record(ctx, start, true) // the last, partial second: a fan-out shorter than a second has one too
		return w.samples
	}
}

// record appends a sample numbered by the second since start that it
// closes; the last one closes the seconds that end after every pod
// arrived, and at least one more.
func (w *writeTracer) record(ctx context.Context, start time.Time, last bool) {
	s, err := w.sample(ctx)
	if err != nil {
		return
	}
	s.LatencyBackoffs -= w.base.LatencyBackoffs
	s.ThrottledBackoffs -= w.base.ThrottledBackoffs
	switch {
	case !last:
		s.Second = int((time.Since(start) + time.Second/2) / time.Second) // a tick comes a little after its second
	case len(w.samples) > 0:
		s.Second = max(w.samples[len(w.samples)-1].Second+1, secondsUpTo(time.Since(start)))
	default:
		s.Second = secondsUpTo(time.Since(start))
	}
	w.samples = append(w.samples, s)
}

// sample is one scrape.
func (w *writeTracer) sample(ctx context.Context) (WriteSample, error) {
	code, body, err := testkit.Get(ctx, w.client, w.url, "", false)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET %s: %d: %.200s", w.url, code, body)
	}
	if err != nil {
		return WriteSample{}, err
	}
	e, err := probe.ParseExposition(string(body))
	if err != nil {
		return WriteSample{}, err
	}
	return WriteSample{
		Allowed:           e.Sum("metawatch_write_rate", "", ""),
		BusyWorkers:       e.Most("controller_runtime_active_workers"),
		Workers:           e.Most("controller_runtime_max_concurrent_reconciles"),
		Queued:            e.Sum("workqueue_depth", "", ""),
		LatencyBackoffs:   e.Sum("metawatch_write_backoffs_total", "reason", "latency"),
		ThrottledBackoffs: e.Sum("metawatch_write_backoffs_total", "reason", "throttled"),
	}, nil
}

// secondsUpTo is d in whole seconds, rounded up, at least one.
func secondsUpTo(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// fillWritten sets each sample's Written: the arrivals since the second
// the sample before it closed, up to its own (a second a scrape missed
// counts in the next sample), so that the samples count every arrival
// before the last one's second.
func fillWritten(samples []WriteSample, start time.Time, arrivals []time.Time) {
	for _, t := range arrivals {
		second := int(t.Sub(start) / time.Second)
		i := sort.Search(len(samples), func(i int) bool { return samples[i].Second > second })
		if i < len(samples) {
			samples[i].Written++
		}
	}
}
