package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/seed"
)

// FanOutResult is one fan-out: how long until the last pod carried the new
// value, and how fast the pods came to carry it.
type FanOutResult struct {
	Pods int
	Took time.Duration
	// PeakPerSecond is the most pods that came to carry the value within
	// any one second (PeakPerSecond of the observer's arrival times).
	PeakPerSecond float64
	// Arrivals are when each pod was seen carrying the value.
	Arrivals []time.Time
}

// FanOut sets label to value on every one of namespaces and returns how
// long it took until o, an observer of every namespace, saw every pod carry
// value (the running variant's work), for up to timeout.
func FanOut(ctx context.Context, c client.Client, o *Observer, namespaces []string, value string, timeout time.Duration) (FanOutResult, error) {
	return fanOut(ctx, c, o, namespaces, value, timeout, func() error { return nil })
}

// BareFanOut is FanOut with no variant running: the harness makes the same
// metadata-only applies itself, as metawatch's field manager, with
// concurrency workers, to every pod not carrying value yet (all of them, from
// a converged state): the most this machine's API server takes.
func BareFanOut(ctx context.Context, c client.Client, o *Observer, namespaces []string, value string, concurrency int, timeout time.Duration) (FanOutResult, error) {
	return fanOut(ctx, c, o, namespaces, value, timeout, func() error {
		pods := o.notCarrying(value)
		return seed.ForEach(ctx, len(pods), concurrency, func(i int) error {
			namespace, name, _ := strings.Cut(pods[i], "/")
			return retry.OnError(overloadBackoff, overloaded, func() error { return applyLabel(ctx, c, o.label, namespace, name, value) })
		})
	})
}

// overloadBackoff is how the bare client retries a write the API server
// was too loaded to finish: as client-go's own clients do on a 429, and as
// metawatch's workqueue does on any error, it tries again later instead of
// giving up the whole fan-out (at 10k pods on two shared cores, one apply
// in thousands timed out after the server's 60 s).
var overloadBackoff = wait.Backoff{Steps: 6, Duration: time.Second, Factor: 2, Jitter: 0.1}

// overloaded reports whether err is the API server's answer to more than
// it could take: a timeout, 429 Too Many Requests, or 503.
func overloaded(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err)
}

// fanOut labels the namespaces, runs write (the bare client's applies, or
// nothing where a variant writes) and waits for every pod to carry value.
func fanOut(ctx context.Context, c client.Client, o *Observer, namespaces []string, value string, timeout time.Duration, write func() error) (FanOutResult, error) {
	if !o.everyNamespace {
		return FanOutResult{}, fmt.Errorf("the fan-out needs an observer of every namespace")
	}
	o.expect(value)
	start := time.Now()
	for _, ns := range namespaces {
		if err := labelNamespace(ctx, c, ns, o.label, value); err != nil {
			return FanOutResult{}, err
		}
	}
	if err := write(); err != nil {
		return FanOutResult{}, err
	}
	if err := o.waitAll(ctx, value, timeout); err != nil {
		return FanOutResult{}, err
	}
	took := time.Since(start)
	arrivals := o.arrivalTimes()
	return FanOutResult{Pods: len(arrivals), Took: took, PeakPerSecond: PeakPerSecond(arrivals), Arrivals: arrivals}, nil
}

// PeakPerSecond is the most of times that fall within any one second (a
// window starting at each of them): the peak rate of the pods' arrivals.
func PeakPerSecond(times []time.Time) float64 {
	sorted := slices.SortedFunc(slices.Values(times), func(a, b time.Time) int { return a.Compare(b) })
	peak, first := 0, 0
	for last, t := range sorted {
		for t.Sub(sorted[first]) >= time.Second {
			first++
		}
		peak = max(peak, last-first+1)
	}
	return float64(peak)
}
