package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errFenced is returned for a write attempted after the fence closed.
var errFenced = errors.New("this generation is stopping: no more writes")

// WriteFence stands between a generation's rules and the API server. Closing
// it refuses new writes and waits for the ones in flight: after that, and
// only after that, the Lease may be released and another replica, or the next
// generation, may write. A write in flight is not cancelled by shutdown (the
// server may apply a request whatever the client does once it is sent), it
// is waited for, up to writeTimeout.
type WriteFence struct {
	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

// writeTimeout bounds one write that shutdown waits for.
const writeTimeout = 30 * time.Second

// NewWriteFence returns an open fence.
func NewWriteFence() *WriteFence { return &WriteFence{} }

// enter registers a write, or refuses it once the fence is closed.
func (f *WriteFence) enter() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errFenced
	}
	f.inflight.Add(1)
	return nil
}

// Close refuses every write from now on and waits, until ctx ends, for the
// writes in flight. It reports whether they all finished.
func (f *WriteFence) Close(ctx context.Context) bool {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// fencedWriter is a client.Writer whose patches pass the fence (metawatch
// writes by patch and apply only).
type fencedWriter struct {
	client.Writer
	fence *WriteFence
}

func (w fencedWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := w.fence.enter(); err != nil {
		return err
	}
	defer w.fence.inflight.Done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	return w.Writer.Patch(ctx, obj, patch, opts...)
}
