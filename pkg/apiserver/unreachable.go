package apiserver

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Unreachable reports whether err means the API server could not be reached
// (or answered that it is not ready), as opposed to an answer about the request.
func Unreachable(err error) bool {
	var netErr net.Error
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		errors.As(err, &netErr) || apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err)
}

// RetryUnreachable runs f until it succeeds, fails for another reason, or ctx
// ends, backing off from 1s to 30s while the API server is unreachable and
// saying so each time.
func RetryUnreachable(ctx context.Context, log logr.Logger, what string, f func() error) error {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 30 * time.Second}
	for {
		err := f()
		if err == nil || !Unreachable(err) {
			return err
		}
		delay := backoff.Step()
		log.Info("the API server is unreachable; retrying", "while", what, "in", delay.Round(time.Second).String(), "error", err.Error())
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
	}
}
