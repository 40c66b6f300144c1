package pace_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/authority/pace"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A 429 asking writes to pause for an hour (a proxy's or a server's
// mistake) pauses them for --write-retry-after-max only, through the real
// client-go request path to a real API server: the writes that wait for
// the pause land, client-go's own retry of the 429 sleeps the cap, not an
// hour, and a write whose deadline comes before the pause's end fails at
// once, saying why. Before the cap, the first two waited until their
// deadline and failed, and the third failed only at its deadline, with
// "context deadline exceeded".
func TestARetryAfterOfAnHourPausesWritesForTheCapOnly(t *testing.T) {
	controlplane.SkipIfShort(t)
	admin := testkit.Client(t, cp.Config)
	const ns = "pace-retry-after"
	testkit.Namespace(t, admin, ns, nil)
	configMaps(t, admin, ns, 4)

	t.Run("the writes waiting for the pause, and client-go's retry, wait the cap", func(t *testing.T) {
		const limit = 2 * time.Second
		throttle := hourThrottle("cm-0")
		pacer := pace.New(pace.RateBounds{Min: 1, Max: 1000, Start: 50, RetryAfterMax: limit}, testr.New(t), nil)
		writer, seen := throttledClient(t, pacer, throttle)

		// cm-0 is answered 429 with Retry-After: 3600 once; client-go
		// retries it after the Retry-After it reads.
		throttled := testkit.Metric(t, "metawatch_writes_throttled_total", nil)
		retried := make(chan error, 1)
		go func() { retried <- labelWithin(t, writer, ns, "cm-0", testkit.Timeout) }()
		select {
		case <-throttle.first:
		case err := <-retried:
			t.Fatalf("cm-0's write ended (%v) before it was answered 429", err)
		}
		// The pause begins once the pacer has read the 429, a moment after
		// the throttle answered it: only a write sent after that must wait.
		testkit.WaitFor(t, "the pacer to read the 429", testkit.Timeout, func() bool {
			return testkit.Metric(t, "metawatch_writes_throttled_total", nil) > throttled
		})
		// A write sent during the pause waits for it.
		if err := labelWithin(t, writer, ns, "cm-1", testkit.Timeout); err != nil {
			t.Errorf("a write sent during the pause, with a deadline of %s: %v; want it to wait for the pause, cut to %s, and land", testkit.Timeout, err, limit)
		}
		if err := <-retried; err != nil {
			t.Errorf("the write answered 429, with a deadline of %s: %v; want client-go to retry it after %s and the retry to land", testkit.Timeout, err, limit)
		}
		if got := seen.retryAfters(); len(got) != 1 || got[0] != "2" {
			t.Errorf("client-go read the Retry-After headers %q of the 429s, want [\"2\"]: the cap's seconds", got)
		}
		answered := throttle.answered()
		for _, a := range throttle.sent() {
			if a.Before(answered.Add(limit)) {
				t.Errorf("a write reached the API server %s after the 429, within the pause of %s", a.Sub(answered), limit)
			}
		}
		assertLabels(t, admin, ns, "cm-0", "cm-1")
	})

	t.Run("a write whose deadline comes before the pause's end fails at once", func(t *testing.T) {
		throttle := hourThrottle("cm-2")
		pacer := pace.New(pace.DefaultRateBounds(), testr.New(t), nil) // a cap of 30s
		writer, _ := throttledClient(t, pacer, throttle)
		const deadline = 10 * time.Second

		for _, name := range []string{"cm-2", "cm-3"} { // the write answered 429, then one sent during the pause
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			err := label(ctx, writer, ns, name, "capped")
			early := ctx.Err() == nil // returned before its deadline
			cancel()
			t.Logf("%s: %v", name, err)
			var late *pace.WaitError
			switch {
			case !errors.As(err, &late):
				t.Errorf("%s, with a deadline of %s during a pause of 30s: %v; want it refused at once, saying why", name, deadline, err)
				continue
			case !early:
				t.Errorf("%s was refused only at its deadline: %v", name, err)
			case authority.Classify(err) != authority.SendSoon:
				t.Errorf("%s refused for the pause is classified %s, want %s: tried again once the pause is over, not counted failed", name, authority.Classify(err), authority.SendSoon)
			}
			for _, want := range []string{"the API server asked writes to pause for 1h0m0s (HTTP 429 Retry-After), cut to 30s by --write-retry-after-max",
				"this write's deadline is in", "not sent, it is tried again once the pause is over"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s's error\n  %s\ndoes not say\n  %s", name, err, want)
				}
			}
		}
		if sent := throttle.sent(); len(sent) != 0 {
			t.Errorf("%d write(s) reached the API server during the pause", len(sent))
		}
	})
}

// throttle stands in front of the API server: it answers the first write
// to each of its objects 429 with Retry-After: 3600, without sending it
// on, and records when the writes it sends on leave.
type throttle struct {
	first chan struct{} // closed at the first 429

	mu       sync.Mutex
	pending  map[string]bool // objects whose first write is still to be refused
	at       time.Time       // when the first 429 was answered
	sentWhen []time.Time     // writes sent on since
}

func hourThrottle(names ...string) *throttle {
	th := &throttle{first: make(chan struct{}), pending: map[string]bool{}}
	for _, n := range names {
		th.pending[n] = true
	}
	return th
}

func (th *throttle) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if !pace.Mutating(req.Method) {
			return next.RoundTrip(req)
		}
		th.mu.Lock()
		name := path.Base(req.URL.Path)
		refuse := th.pending[name]
		if refuse {
			delete(th.pending, name)
		} else if !th.at.IsZero() {
			th.sentWhen = append(th.sentWhen, time.Now())
		}
		th.mu.Unlock()
		if !refuse {
			return next.RoundTrip(req)
		}
		if req.Body != nil {
			_ = req.Body.Close()
		}
		th.mu.Lock()
		if th.at.IsZero() {
			th.at = time.Now()
			defer close(th.first)
		}
		th.mu.Unlock()
		return &http.Response{StatusCode: http.StatusTooManyRequests, Request: req,
			Header: http.Header{"Retry-After": {"3600"}, "Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure",` +
				`"message":"too many requests, try again in an hour","reason":"TooManyRequests","code":429}`))}, nil
	})
}

func (th *throttle) answered() time.Time {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.at
}

func (th *throttle) sent() []time.Time {
	th.mu.Lock()
	defer th.mu.Unlock()
	return append([]time.Time(nil), th.sentWhen...)
}

// retryAfters records the Retry-After of every 429 client-go reads.
type retryAfters struct {
	mu     sync.Mutex
	values []string
}

func (r *retryAfters) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusTooManyRequests {
			r.mu.Lock()
			r.values = append(r.values, resp.Header.Get("Retry-After"))
			r.mu.Unlock()
		}
		return resp, err
	})
}

func (r *retryAfters) retryAfters() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.values...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// throttledClient is the admin's client whose writes pacer paces, with th
// between the pacer and the API server, and what client-go reads of the
// 429s (the outermost wrapper: it sees the pacer's answer).
func throttledClient(t *testing.T, pacer *pace.Pacer, th *throttle) (client.Client, *retryAfters) {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(th.wrap)
	cfg = pacer.Config(cfg)
	seen := &retryAfters{}
	cfg.Wrap(seen.wrap)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, seen
}

// labelWithin labels ConfigMap name of ns paced=capped, within timeout.
func labelWithin(t *testing.T, c client.Client, ns, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	return label(ctx, c, ns, name, "capped")
}

func assertLabels(t *testing.T, c client.Client, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		var cm corev1.ConfigMap
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			t.Fatal(err)
		}
		if v := cm.Labels["paced"]; v != "capped" {
			t.Errorf("ConfigMap %s/%s has paced=%q, want capped: its write was lost", ns, name, v)
		}
	}
}
