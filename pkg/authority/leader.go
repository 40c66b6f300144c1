package authority

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderClaim is the claim of a single leader: the leader-election lock,
// wrapped so that every successful write of a record naming this replica
// (an acquisition or a renewal) renews the claim for renewDeadline from the
// moment the write was sent.
//
// Why that is safe: client-go writes the Lease with its last read
// resourceVersion as a precondition, so a successful write proves no other
// replica took the Lease before it was applied; a standby takes the Lease
// only after it has seen no change for the lease duration on its own clock,
// counted from no earlier than the write was sent. With renewDeadline <
// leaseDuration, this replica's claim ends first. The elector itself would
// go on leading until its renew deadline after the last successful renewal
// as it measures it, which after a pause is too late: it is not a fence.
type LeaderClaim struct {
	resourcelock.Interface
	renewDeadline time.Duration

	mu      sync.Mutex
	renewed time.Time // when the last successful write naming this replica was sent
}

// NewLeaderClaim wraps lock; renewDeadline is the elector's.
func NewLeaderClaim(lock resourcelock.Interface, renewDeadline time.Duration) *LeaderClaim {
	return &LeaderClaim{Interface: lock, renewDeadline: renewDeadline}
}

// Create writes the first record of the Lease (an acquisition).
func (l *LeaderClaim) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Create(ctx, record)
	l.note(record, sent, err)
	return err
}

// Update writes the record (a renewal, an acquisition or a release).
func (l *LeaderClaim) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Update(ctx, record)
	l.note(record, sent, err)
	return err
}

func (l *LeaderClaim) note(record resourcelock.LeaderElectionRecord, sent time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
	case record.HolderIdentity == l.Identity() && record.HolderIdentity != "":
		l.renewed = sent
	default: // released or handed on: this replica no longer writes
		l.renewed = time.Time{}
	}
}

// Until is the end of the claim: renewDeadline after the last successful
// renewal was sent. The same for every object.
func (l *LeaderClaim) Until(types.UID) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renewed.IsZero() {
		return time.Time{}, false
	}
	return l.renewed.Add(l.renewDeadline), true
}
