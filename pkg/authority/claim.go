package authority

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// A Claim is this replica's right to write objects.
type Claim interface {
	// Until is when this replica's right to write the object with uid ends,
	// on its own monotonic clock; ok is false if it has none now.
	Until(uid types.UID) (until time.Time, ok bool)
}

// ErrLapsed is the error of a write whose claim had ended when it was to be
// admitted or sent: it was not sent, and may be tried again once the claim
// is renewed (or is refused then, if another replica holds it).
var ErrLapsed = errors.New("this replica's claim to write the object has lapsed (its Lease was not renewed in time): not sent")

// Stages at which a write is fenced, for metawatch_writes_fenced_total.
const (
	StageAdmission = "admission"
	StageSend      = "send"
)

// Admit checks claim for uid when a write is admitted and returns ctx for
// its request: the transport (Wrap) checks the claim again as the request
// is sent, and the request ends at the claim's end.
func Admit(ctx context.Context, claim Claim, uid types.UID) (context.Context, error) {
	if _, ok := valid(claim, uid); !ok {
		telemetry.WritesFenced.WithLabelValues(StageAdmission).Inc()
		return ctx, ErrLapsed
	}
	return context.WithValue(ctx, claimKey{}, claimed{claim: claim, uid: uid}), nil
}

type claimKey struct{}

type claimed struct {
	claim Claim
	uid   types.UID
}

// valid is the claim's end if it has not passed yet.
func valid(claim Claim, uid types.UID) (time.Time, bool) {
	until, ok := claim.Until(uid)
	return until, ok && time.Now().Before(until)
}

// Wrap returns cfg with a transport that sends a request admitted under a
// claim (Admit) only while the claim holds, bounded by its end. It runs after
// client-go's rate limiter, right before the request is handed to the
// connection. Requests without a claim pass untouched.
func Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return transport{next: rt} })
	return cfg
}

type transport struct{ next http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, ok := req.Context().Value(claimKey{}).(claimed)
	if !ok {
		return t.next.RoundTrip(req)
	}
	until, ok := valid(c.claim, c.uid)
	if !ok {
		telemetry.WritesFenced.WithLabelValues(StageSend).Inc()
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, ErrLapsed
	}
	ctx, cancel := context.WithDeadline(req.Context(), until)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases the request's deadline timer once its body is read.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
