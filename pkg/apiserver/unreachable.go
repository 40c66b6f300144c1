package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Unreachable reports whether err means the API server could not be reached
// (or answered that it is not ready), as opposed to an answer about the
// request or a connection that retrying will not mend (Untrusted).
func Unreachable(err error) bool {
	if err == nil || Untrusted(err) {
		return false
	}
	var netErr net.Error // *url.Error is one whatever it wraps: Untrusted first
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		errors.As(err, &netErr) || apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err)
}

// Untrusted reports whether err is a TLS connection to the API server that
// failed on the client's own settings or the server's certificate: a
// certificate its certificate authority did not sign, issued for another
// name or expired, or a server that does not speak TLS at that address.
// Waiting does not mend these; the kubeconfig, the cluster's certificates or
// the clock must change, and a restart reads them again.
func Untrusted(err error) bool {
	if err == nil {
		return false
	}
	var (
		verification *tls.CertificateVerificationError
		authority    x509.UnknownAuthorityError
		hostname     x509.HostnameError
		invalid      x509.CertificateInvalidError
		notTLS       tls.RecordHeaderError
	)
	return errors.As(err, &verification) || errors.As(err, &authority) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.Is(err, http.ErrSchemeMismatch) ||
		// Only the first record's header error carries the connection: no TLS
		// at the address. A bad record later is a broken stream, retried.
		(errors.As(err, &notTLS) && notTLS.Conn != nil)
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
