package pace

import (
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Config is cfg for a client whose writes p paces, nil p: cfg itself.
//
// Pacing happens in the HTTP transport, where every attempt passes:
// client-go retries a 429 itself (honouring Retry-After, up to ten times),
// so only there does the pacer see each one. client-go's own rate limiter
// is turned off for this client, or its token bucket (one per API group and
// version, at --kube-api-qps) would cap the writes below the ceiling; the
// client's reads, which do not go to the pacer, wait for a token bucket of
// cfg's instead (cfg.RateLimiter, or QPS and Burst as client-go reads them).
//
// The pacer's wrapper is the outermost: a write waits for the rate before
// any wrapper cfg already has (the write fence checks its claim after the
// wait, as the request leaves).
func (p *Pacer) Config(cfg *rest.Config) *rest.Config {
	if p == nil {
		return cfg
	}
	out := rest.CopyConfig(cfg)
	out.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	reads := readLimiter(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return transport{next: rt, pacer: p, reads: reads} })
	return out
}

// readLimiter is the rate limiter client-go would give a client of cfg (nil: none).
func readLimiter(cfg *rest.Config) flowcontrol.RateLimiter {
	if cfg.RateLimiter != nil {
		return cfg.RateLimiter
	}
	qps, burst := cfg.QPS, cfg.Burst
	if qps == 0 {
		qps = rest.DefaultQPS
	}
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	if qps < 0 {
		return nil
	}
	return flowcontrol.NewTokenBucketRateLimiter(qps, burst)
}

// Mutating reports whether method writes: what the pacer paces.
func Mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

type transport struct {
	next  http.RoundTripper
	pacer *Pacer
	reads flowcontrol.RateLimiter
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !Mutating(req.Method) {
		if t.reads != nil {
			if err := t.reads.Wait(req.Context()); err != nil {
				return nil, closeBody(req, err)
			}
		}
		return t.next.RoundTrip(req)
	}
	if err := t.pacer.Wait(req.Context()); err != nil {
		return nil, closeBody(req, err)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		// No answer: nothing the server said about its load (a dropped
		// connection, a claim that lapsed, a cancelled request).
		return nil, err
	}
	a := answerOf(resp, time.Since(start))
	t.pacer.Observe(a)
	if !a.Throttled || !clientGoRetries(resp) {
		return resp, nil
	}
	return t.pacer.throttled(req, resp)
}

// throttled is what client-go gets of a 429 it would retry: the response,
// its Retry-After cut to the cap (client-go sleeps for it before the retry,
// which then waits for the pacer's pause, as long), or, if the pause ends
// after the request's deadline, the pacer's WaitError at once instead of a
// sleep until the deadline and a failure. APF's 429 means the server did
// not handle the write.
func (p *Pacer) throttled(req *http.Request, resp *http.Response) (*http.Response, error) {
	capRetryAfter(resp.Header, p.retryAfterMax)
	if _, err := p.pauseLeft(req.Context()); err != nil {
		drainAndClose(resp.Body)
		return nil, err
	}
	return resp, nil
}

// answerOf reads what resp says about the API server's load.
func answerOf(resp *http.Response, latency time.Duration) Answer {
	a := Answer{Latency: latency, Throttled: resp.StatusCode == http.StatusTooManyRequests, Served: ServedBy{
		FlowSchemaUID:    resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID),
		PriorityLevelUID: resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID),
	}}
	if a.Throttled {
		if s, err := strconv.Atoi(resp.Header.Get(retryAfter)); err == nil && s > 0 {
			a.RetryAfter = time.Duration(min(s, maxSeconds)) * time.Second
		}
	}
	return a
}

const retryAfter = "Retry-After"

// maxSeconds is the longest Retry-After a time.Duration holds: a header
// asking for more (a server's or a proxy's mistake) would overflow into a
// negative pause.
const maxSeconds = math.MaxInt64 / int(time.Second)

// clientGoRetries reports whether client-go retries resp, a 429, after a
// sleep of its Retry-After (rest.checkWait): when the header is a whole
// number of seconds. Without one, client-go returns the 429, and the
// pacer's pause is its default.
func clientGoRetries(resp *http.Response) bool {
	_, err := strconv.Atoi(resp.Header.Get(retryAfter))
	return err == nil
}

// capRetryAfter cuts h's Retry-After to whole seconds of at most limit,
// what client-go reads before it sleeps. Below a second it becomes 0:
// client-go retries at once, and the retry waits for the pacer's pause.
// A header that is not a number of seconds is left as it is (client-go
// does not retry then).
func capRetryAfter(h http.Header, limit time.Duration) {
	most := int(limit / time.Second)
	if s, err := strconv.Atoi(h.Get(retryAfter)); err == nil && s > most {
		h.Set(retryAfter, strconv.Itoa(most))
	}
}

// drainAndClose reads what is left of a short body (so the connection is
// reused) and closes it.
func drainAndClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	_ = body.Close()
}

// closeBody closes req's body, as a RoundTripper must even when it fails, and returns err.
func closeBody(req *http.Request, err error) error {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return err
}
