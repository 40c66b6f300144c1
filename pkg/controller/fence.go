package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errFenced is returned for a write attempted after the fence closed.
var errFenced = errors.New("this generation is stopping: no more writes")

// errNotOurs is returned for a write to an object whose bucket this replica
// does not hold: with sharding, the replica that holds it writes it.
var errNotOurs = errors.New("another replica holds this object's bucket")

// errShardPending is returned for a write to an object whose bucket is
// coming to this replica but is not held yet (its holder is handing it on,
// or dead and its Lease not expired): the write is tried again shortly.
var errShardPending = errors.New("this object's bucket is coming to this replica")

// shardPendingRetry is how soon a write waiting for its bucket is tried again.
const shardPendingRetry = time.Second

// ShardGate admits a write by the uid of the object written (sharding.Ring
// is one): with several active replicas, only the one holding the object's
// bucket writes it, and done is called when the write has ended. Pending
// tells a refusal that will pass once a handover is done (the write must
// wait) from one that will not (another replica writes the object).
type ShardGate interface {
	Begin(uid types.UID) (done func(), ok bool)
	Pending(uid types.UID) bool
}

// notWritten reports whether err means the write was not sent on purpose:
// the generation is stopping, or another replica holds the object.
func notWritten(err error) bool { return errors.Is(err, errFenced) || errors.Is(err, errNotOurs) }

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

// fencedWriter is a client.Writer whose patches pass the fence and the shard
// gate, either of which may be nil (metawatch writes by patch and apply
// only). obj must carry the uid of the object written.
type fencedWriter struct {
	client.Writer
	fence  *WriteFence
	shards ShardGate
}

func (w fencedWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if w.fence != nil {
		if err := w.fence.enter(); err != nil {
			return err
		}
		defer w.fence.inflight.Done()
	}
	if w.shards != nil {
		done, ok := w.shards.Begin(obj.GetUID())
		if !ok && w.shards.Pending(obj.GetUID()) {
			return errShardPending
		}
		if !ok {
			return errNotOurs
		}
		defer done()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	return w.Writer.Patch(ctx, obj, patch, opts...)
}
