package authority

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
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

// ShardPendingRetry is how soon a write waiting for its bucket is tried again.
const ShardPendingRetry = time.Second

// ShardGate admits a write by the uid of the object written (sharding.Ring
// is one): with several active replicas, only the one holding the object's
// bucket writes it, and done is called when the write has ended. Pending
// tells a refusal that will pass once a handover is done (the write must
// wait) from one that will not (another replica writes the object).
type ShardGate interface {
	Begin(uid types.UID) (done func(), ok bool)
	Pending(uid types.UID) bool
}

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

// writeTimeout bounds one write that shutdown waits for; under a claim, the
// claim's end bounds it sooner.
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

// Guard is what every write of a generation passes, in this order: the
// identity (refusing while another writer shares its name), its write
// fence, the shard gate and the claim, any of which may be nil.
type Guard struct {
	Identity *Identity
	Fence    *WriteFence
	Gate     ShardGate
	Claim    Claim
}

// Write calls write with a context for its request if the guard admits a
// write of the object keyed uid (its bucket and claim); otherwise it
// returns why not, which Classify tells apart.
func (g Guard) Write(ctx context.Context, uid types.UID, write func(context.Context) error) error {
	if err := g.Identity.Refused(); err != nil {
		return err
	}
	if g.Fence != nil {
		if err := g.Fence.enter(); err != nil {
			return err
		}
		defer g.Fence.inflight.Done()
	}
	if g.Gate != nil {
		done, ok := g.Gate.Begin(uid)
		if !ok && g.Gate.Pending(uid) {
			return errShardPending
		}
		if !ok {
			return errNotOurs
		}
		defer done()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if g.Claim != nil {
		var err error
		// Checked again as the request is sent (Wrap's transport, after the
		// rate limiter), and the request ends when the claim does.
		if ctx, err = Admit(ctx, g.Claim, uid); err != nil {
			return err
		}
	}
	return write(ctx)
}

// LeavesToAnother reports whether another replica writes the object keyed
// uid (sharded: it holds its bucket, which is not coming to this one).
func (g Guard) LeavesToAnother(uid types.UID) bool {
	if g.Gate == nil {
		return false
	}
	done, ok := g.Gate.Begin(uid)
	if ok {
		done()
		return false
	}
	return !g.Gate.Pending(uid)
}
