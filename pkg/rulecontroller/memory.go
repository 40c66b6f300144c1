package rulecontroller

import "k8s.io/apimachinery/pkg/types"

// memory is everything a kind's controller remembers of objects between
// events, in this process only. None of it is state: a restart (or the next
// generation) starts with it empty, and each part says below what that costs
// (at most a conflict reported once more, or a hand edit reported instead of
// put back). Every part holds an entry per object only while something is
// pending for it, so memory grows with the work queued, not with the cluster.
type memory struct {
	// snapshots: the labels and annotations an object had before its first
	// unreported change, for the reporter's diff (memory_snapshots.go).
	snapshots *snapshots
	// waiting: objects whose Namespace or owner is not cached yet; its
	// arrival judges them (memory_waiting.go).
	waiting *waiters
	// reclaims: keys metawatch owned until another manager's Update took
	// them, to be put back (memory_reclaims.go).
	reclaims *reclaims
	// yielded: keys left to another manager after a conflict, with its value,
	// so the conflict is neither retried nor reported again (memory_yielded.go).
	yielded *yielded
	// takeovers: when another manager took each key, to stop a fight between
	// two controllers that both force one key (memory_takeovers.go).
	takeovers *takeovers
	// fights: keys metawatch leaves, for a while, to something that keeps
	// undoing its write of them (memory_fights.go).
	fights *fights
}

func newMemory() *memory {
	return &memory{
		snapshots: newSnapshots(),
		waiting:   newWaiters(),
		reclaims:  newReclaims(),
		yielded:   newYielded(),
		takeovers: newTakeovers(),
		fights:    newFights(),
	}
}

// forget drops what the rules remember of a deleted object. Its snapshot is
// not dropped here: the reporter takes it when it reports the deletion.
func (m *memory) forget(key types.NamespacedName) {
	m.reclaims.clear(key)
	m.yielded.forget(key)
	m.waiting.forget(key)
	m.takeovers.forget(key)
	m.fights.forget(key)
}
