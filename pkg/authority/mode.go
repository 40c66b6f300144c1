package authority

import (
	"errors"
	"fmt"
)

// Mode is how the replicas of one installation share the writing. It is
// resolved once from the flags (ResolveMode), where it is validated, and
// carried whole from there: what differs between modes is asked of the
// mode, never read from which optional parts happen to be set.
//
//	mode          flags                          runs generations   writes under
//	single        (none)                         the one replica    no claim
//	leader        --leader-elect                 the leader         the leader Lease
//	warm standby  --leader-elect --warm-standby  every replica      the leader Lease
//	sharded       --sharding                     every replica      its buckets' Leases
type Mode int

const (
	// Single means one replica and no Lease; it writes everything, always.
	Single Mode = iota
	// Leader means leader election; only the replica holding the Lease runs
	// generations and writes.
	Leader
	// WarmStandby means leader election, and every replica runs generations
	// with synced caches; a standby's writes wait at its generation's gate
	// until it leads, so a failover waits for the Lease, not for a sync.
	WarmStandby
	// Sharded means every replica running generations on its share of the objects
	// (the buckets of the sharding ring it holds) and writes that share.
	Sharded
)

// ResolveMode is the mode the flags ask for, or an error naming the flags
// that exclude each other and what to drop.
func ResolveMode(leaderElect, warmStandby, sharded bool) (Mode, error) {
	var errs []error
	if sharded && leaderElect {
		errs = append(errs, errors.New("--sharding and --leader-elect exclude each other: sharded, every replica is active on its own share; drop --leader-elect"))
	}
	if sharded && warmStandby {
		errs = append(errs, errors.New("--warm-standby and --sharding exclude each other: sharded, every replica is active and warm on its own share; drop --warm-standby"))
	}
	if warmStandby && !leaderElect {
		errs = append(errs, errors.New("--warm-standby needs --leader-elect: without leader election there is no standby to keep warm; add --leader-elect or drop --warm-standby"))
	}
	if len(errs) > 0 {
		return 0, errors.Join(errs...) // every mistake at once, as validateFlags says the others
	}
	switch {
	case sharded:
		return Sharded, nil
	case warmStandby:
		return WarmStandby, nil
	case leaderElect:
		return Leader, nil
	}
	return Single, nil
}

// String is the mode as the log and the docs name it.
func (m Mode) String() string {
	switch m {
	case Single:
		return "single"
	case Leader:
		return "leader"
	case WarmStandby:
		return "warm standby"
	case Sharded:
		return "sharded"
	}
	return fmt.Sprintf("mode %d", int(m))
}

// ElectsLeader reports whether the replicas elect a leader (a leader Lease).
func (m Mode) ElectsLeader() bool { return m == Leader || m == WarmStandby }

// EveryReplicaRuns reports whether every replica runs generations, not only
// the leader (warm standby: held until it leads; sharded: on its share).
func (m Mode) EveryReplicaRuns() bool { return m == WarmStandby || m == Sharded }

// HasLeases reports whether the mode keeps Leases (and so their flags apply).
func (m Mode) HasLeases() bool { return m != Single }

// Ring is the sharding ring as writes see it: the gate of each object's
// bucket, and the claim on it (sharding.Ring).
type Ring interface {
	ShardGate
	Claim
}

// Guard is the guard of a generation's writes in this mode: fence always;
// the leader's claim when it elects one; the ring as gate and claim,
// sharded. It refuses parts the mode needs but lacks, or does not use.
func (m Mode) Guard(fence *WriteFence, leader Claim, ring Ring) (Guard, error) {
	g := Guard{Fence: fence}
	switch {
	case fence == nil:
		return Guard{}, errors.New("authority: a guard needs its write fence")
	case m.ElectsLeader() != (leader != nil):
		return Guard{}, fmt.Errorf("authority: the %s mode writes under a leader claim exactly when it elects a leader", m)
	case (m == Sharded) != (ring != nil):
		return Guard{}, fmt.Errorf("authority: the %s mode writes through the sharding ring exactly when it is sharded", m)
	case m == Sharded:
		g.Gate, g.Claim = ring, ring
	case m.ElectsLeader():
		g.Claim = leader
	}
	return g, nil
}
