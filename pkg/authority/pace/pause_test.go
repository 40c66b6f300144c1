package pace

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// clocked is a pacer of limits whose clock stands still at base: what it
// decides depends on the answers it is told of and on deadlines set from base,
// never on how fast the test runs.
func clocked(limits RateBounds, base time.Time) *Pacer {
	p := New(limits, logr.Discard(), nil)
	p.now = func() time.Time { return base }
	p.lastTick = base
	return p
}

// throttledBy is a 429 with the Retry-After header retryAfter ("": none).
func throttledBy(retryAfter string) *http.Response {
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"kind":"Status"}`))}
	if retryAfter != "" {
		resp.Header.Set("Retry-After", retryAfter)
	}
	return resp
}

// A 429 pauses every write for its Retry-After, cut to the cap, and
// client-go, which sleeps for the header before its own retry, reads the
// cut value; a header that is missing or no number keeps the default pause
// of a second, and client-go's reading of it (no retry) is left alone.
func TestA429PausesWritesAtMostTheCap(t *testing.T) {
	for name, tc := range map[string]struct {
		header     string
		max        time.Duration
		wantPause  time.Duration
		wantHeader string // what client-go reads
	}{
		"an hour is cut to the default cap":           {header: "3600", wantPause: 30 * time.Second, wantHeader: "30"},
		"an hour is cut to a cap of 5s":               {header: "3600", max: 5 * time.Second, wantPause: 5 * time.Second, wantHeader: "5"},
		"a Retry-After below the cap is kept":         {header: "8", wantPause: 8 * time.Second, wantHeader: "8"},
		"a Retry-After equal to the cap is kept":      {header: "30", wantPause: 30 * time.Second, wantHeader: "30"},
		"a cap below a second: client-go retries now": {header: "3", max: 500 * time.Millisecond, wantPause: 500 * time.Millisecond, wantHeader: "0"},
		"a cap of 1.5s: client-go's whole seconds":    {header: "3", max: 1500 * time.Millisecond, wantPause: 1500 * time.Millisecond, wantHeader: "1"},
		"no Retry-After: the default second":          {header: "", wantPause: time.Second, wantHeader: ""},
		"a Retry-After of 0: the default second":      {header: "0", wantPause: time.Second, wantHeader: "0"},
		"a date (not read): the default second":       {header: "Wed, 21 Oct 2026 07:28:00 GMT", wantPause: time.Second, wantHeader: "Wed, 21 Oct 2026 07:28:00 GMT"},
		"the default second is cut to a smaller cap":  {header: "", max: 200 * time.Millisecond, wantPause: 200 * time.Millisecond, wantHeader: ""},
		"more seconds than a duration holds":          {header: "9223372036854775807", wantPause: 30 * time.Second, wantHeader: "30"},
		"more seconds than an int holds (no number)":  {header: "99999999999999999999", wantPause: time.Second, wantHeader: "99999999999999999999"},
	} {
		t.Run(name, func(t *testing.T) {
			base := time.Now()
			p := clocked(RateBounds{Min: 1, Max: 1000, Start: 50, RetryAfterMax: tc.max}, base)
			resp := throttledBy(tc.header) //nolint:bodyclose // a fake answer, its body in memory
			got, err := transport{pacer: p, next: answering(resp)}.RoundTrip(patch(t.Context()))
			if err != nil {
				t.Fatalf("a write without a deadline got %v, want the 429", err)
			}
			defer got.Body.Close()
			if pause := p.pausedUntil.Sub(base); pause != tc.wantPause {
				t.Errorf("Retry-After %q with a cap of %s paused writes for %s, want %s", tc.header, tc.max, pause, tc.wantPause)
			}
			if h := got.Header.Get("Retry-After"); h != tc.wantHeader {
				t.Errorf("client-go reads Retry-After %q, want %q", h, tc.wantHeader)
			}
		})
	}
}

// A write whose wait for the pace would end after its deadline is not
// sent: it fails at once, saying what holds it, and when it may leave.
func TestAWriteThatWouldWaitPastItsDeadlineFailsAtOnce(t *testing.T) {
	for name, tc := range map[string]struct {
		limits RateBounds
		// tokenTaken: a write took the rate's one token first.
		tokenTaken bool
		// throttled: the Retry-After of a 429 answered first (nil: none).
		throttled *string
		deadline  time.Duration // from now; 0: none
		wantWait  time.Duration // the pause it waits for, when it fits
		want      []string      // what the error says; none: no error
		wantRetry time.Duration
	}{
		"paused an hour, cut to 30s, deadline in 4s": {
			throttled: ptr("3600"), deadline: 4 * time.Second, wantRetry: 30 * time.Second,
			want: []string{"the API server asked writes to pause for 1h0m0s (HTTP 429 Retry-After), cut to 30s by --write-retry-after-max",
				"the pause ends in 30s", "this write's deadline is in 4s: not sent, it is tried again once the pause is over"},
		},
		"paused 8s, deadline in 2.5s": {
			throttled: ptr("8"), deadline: 2500 * time.Millisecond, wantRetry: 8 * time.Second,
			want: []string{"the API server asked writes to pause for 8s (HTTP 429 Retry-After); the pause ends in 8s; this write's deadline is in 2.5s"},
		},
		"paused without a Retry-After, deadline in 300ms": {
			throttled: ptr(""), deadline: 300 * time.Millisecond, wantRetry: time.Second,
			want: []string{"answered a write HTTP 429 without a Retry-After, which pauses writes for 1s", "deadline is in 300ms"},
		},
		"paused an hour, cut to 30s, deadline in 31s: it waits": {
			throttled: ptr("3600"), deadline: 31 * time.Second, wantWait: 30 * time.Second,
		},
		"paused an hour, cut to 30s, no deadline: it waits": {
			throttled: ptr("3600"), wantWait: 30 * time.Second,
		},
		"paused, its deadline the pause's end: it waits": {
			throttled: ptr("5"), deadline: 5 * time.Second, wantWait: 5 * time.Second,
		},
		"not paused, a token at hand": {deadline: time.Millisecond},
		"its turn at 1 write/s a second away, deadline in 500ms": {
			limits: RateBounds{Min: 1, Max: 1, Start: 1}, tokenTaken: true, deadline: 500 * time.Millisecond, wantRetry: time.Second,
			want: []string{"writes are held to 1 a second (the write rate, which adapts to the API server between --write-rate-min and --write-rate-max)",
				"this write's turn comes in 1s; this write's deadline is in 500ms: not sent, it is tried again once its turn comes"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			base := time.Now()
			limits := boundsOrDefault(tc.limits)
			p := clocked(limits, base)
			if tc.tokenTaken {
				if err := p.Wait(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			if tc.throttled != nil {
				p.Observe(answerOf(throttledBy(*tc.throttled), time.Millisecond)) //nolint:bodyclose // a fake answer, its body in memory
			}
			ctx := t.Context()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, base.Add(tc.deadline))
				defer cancel()
			}
			wait, err := p.pauseLeft(ctx)
			if err == nil && wait == 0 {
				err = p.Wait(ctx) // not paused: the rate decides
			}
			if len(tc.want) == 0 {
				if err != nil || wait != tc.wantWait {
					t.Fatalf("the write waits %s and gets %v, want a wait of %s and no error", wait, err, tc.wantWait)
				}
				return
			}
			var late *WaitError
			if !errors.As(err, &late) {
				t.Fatalf("the write got %v, want a WaitError at once", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error\n  %s\ndoes not say\n  %s", err, w)
				}
			}
			if late.RetryIn() != tc.wantRetry {
				t.Errorf("RetryIn is %s, want %s", late.RetryIn(), tc.wantRetry)
			}
		})
	}
}

// A write refused for the rate gives its turn back: the next one is told
// the same wait, not one a token later.
func TestAWriteRefusedForTheRateGivesItsTurnBack(t *testing.T) {
	base := time.Now()
	p := clocked(RateBounds{Min: 1, Max: 1, Start: 1}, base)
	if err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(t.Context(), base.Add(500*time.Millisecond))
	defer cancel()
	for i := range 3 {
		var late *WaitError
		if err := p.Wait(ctx); !errors.As(err, &late) || late.RetryIn() != time.Second {
			t.Fatalf("write %d: %v, want a WaitError whose turn comes in 1s", i+2, err)
		}
	}
}

// A 429 client-go would retry, whose pause ends after the write's deadline,
// comes back as the WaitError at once: client-go would otherwise sleep
// until the deadline and fail. Without a Retry-After client-go does not
// retry, and gets the 429 as before.
func TestA429WhosePauseOutlastsTheDeadlineFailsTheWriteAtOnce(t *testing.T) {
	for name, tc := range map[string]struct {
		header   string
		deadline time.Duration
		wantErr  bool
	}{
		"Retry-After 3600, cut to 30s, deadline in 10s": {header: "3600", deadline: 10 * time.Second, wantErr: true},
		"Retry-After 3600, cut to 30s, deadline in 40s": {header: "3600", deadline: 40 * time.Second},
		"Retry-After 5, deadline in 10s":                {header: "5", deadline: 10 * time.Second},
		"no Retry-After, deadline in 500ms":             {header: "", deadline: 500 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			base := time.Now()
			p := clocked(DefaultRateBounds(), base)
			ctx, cancel := context.WithDeadline(t.Context(), base.Add(tc.deadline))
			defer cancel()
			resp, err := transport{pacer: p, next: answering(throttledBy(tc.header))}.RoundTrip(patch(ctx)) //nolint:bodyclose // a fake answer, its body in memory
			if resp != nil {
				defer resp.Body.Close()
			}
			var late *WaitError
			switch {
			case tc.wantErr && !errors.As(err, &late):
				t.Fatalf("got %v, %v; want a WaitError", resp, err)
			case !tc.wantErr && (err != nil || resp.StatusCode != http.StatusTooManyRequests):
				t.Fatalf("got %v, %v; want the 429", resp, err)
			}
		})
	}
}

// Whatever Retry-After a 429 carries and whatever the cap, the pause is
// positive and at most the cap, client-go reads at most the cap's whole
// seconds (and a header it would not read unchanged), and a write whose
// deadline comes before the pause's end is refused at once.
func FuzzRetryAfterNeverPausesPastTheCap(f *testing.F) {
	f.Add("3600", int64(30*time.Second), int64(4*time.Second))
	f.Add("", int64(500*time.Millisecond), int64(0))
	f.Add("-7", int64(time.Second), int64(time.Hour))
	f.Add("9223372036854775807", int64(time.Minute), int64(2*time.Minute))
	f.Add("+0030", int64(29*time.Second), int64(29*time.Second))
	f.Fuzz(func(t *testing.T, header string, capNanos, deadlineNanos int64) {
		limit := time.Duration(capNanos)
		if limit <= 0 {
			t.Skip() // RateBounds.Validate refuses it
		}
		base := time.Now()
		p := clocked(RateBounds{Min: 1, Max: 1000, Start: 50, RetryAfterMax: limit}, base)
		ctx := t.Context()
		if deadlineNanos > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, base.Add(time.Duration(deadlineNanos)))
			defer cancel()
		}
		resp := throttledBy("") //nolint:bodyclose // a fake answer, its body in memory
		resp.Header["Retry-After"] = []string{header}
		got, err := transport{pacer: p, next: answering(resp)}.RoundTrip(patch(ctx))
		if got != nil {
			defer got.Body.Close()
		}
		pause := p.pausedUntil.Sub(base)
		if pause <= 0 || pause > limit {
			t.Fatalf("Retry-After %q with a cap of %s paused writes for %s", header, limit, pause)
		}
		deadline, hasDeadline := ctx.Deadline()
		var late *WaitError
		switch {
		case errors.As(err, &late):
			if !hasDeadline || !base.Add(pause).After(deadline) {
				t.Fatalf("refused (%v) though the pause of %s ends by its deadline", err, pause)
			}
			return
		case err != nil:
			t.Fatalf("Retry-After %q: %v", header, err)
		}
		asked, askedErr := strconv.Atoi(header)
		read, readErr := strconv.Atoi(got.Header.Get("Retry-After"))
		switch {
		case askedErr != nil && got.Header.Get("Retry-After") != header:
			t.Fatalf("Retry-After %q, which client-go does not read, became %q", header, got.Header.Get("Retry-After"))
		case askedErr == nil && (readErr != nil || read != min(asked, int(limit/time.Second))):
			t.Fatalf("Retry-After %q with a cap of %s: client-go reads %q", header, limit, got.Header.Get("Retry-After"))
		case askedErr == nil && hasDeadline && base.Add(pause).After(deadline):
			t.Fatalf("the pause of %s ends after the deadline, and client-go got the 429 to sleep on", pause)
		}
	})
}

// boundsOrDefault is bounds, or the defaults if unset.
func boundsOrDefault(limits RateBounds) RateBounds {
	if limits == (RateBounds{}) {
		return DefaultRateBounds()
	}
	return limits
}

func ptr(s string) *string { return &s }

// answering is a server that answers every request resp.
func answering(resp *http.Response) http.RoundTripper {
	return roundTripper(func(*http.Request) (*http.Response, error) { return resp, nil })
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// patch is a write of ctx.
func patch(ctx context.Context) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, "https://127.0.0.1/api/v1/namespaces/x/configmaps/y", http.NoBody)
	if err != nil {
		panic(err)
	}
	return req
}
