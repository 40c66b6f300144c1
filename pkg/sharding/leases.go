package sharding

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Labels of the ring's Leases: which ring, and whether a member's or a bucket's.
const (
	RingLabel = "metawatch.dev/ring"
	KindLabel = "metawatch.dev/lease"
)

func (r *Ring) memberLeaseName() string { return r.o.Ring + "-member-" + r.o.Identity }

// MemberLease refers to this replica's member Lease, for Events about it.
func (r *Ring) MemberLease() *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: r.o.Namespace, Name: r.memberLeaseName()}
}
func (r *Ring) bucketLeaseName(b Bucket) string { return r.o.Ring + "-bucket-" + b.String() }

// round renews this replica's membership, then takes the free or abandoned
// buckets it should have and hands on those it should not. One LIST a round
// reads every Lease of the ring, this replica's member Lease included.
func (r *Ring) round(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("sharding")
	listed := r.now() // before the list: what it says is at least this recent
	defer func() {
		r.mu.Lock()
		r.trackBlocked()
		r.mu.Unlock()
		r.notify()
	}()
	members, buckets, err := r.list(ctx)
	if err != nil {
		logger.Error(err, "listing the ring's Leases; this replica stops writing after the renew deadline", "renewDeadline", r.o.RenewDeadline)
		return
	}
	if err := r.renewMember(ctx, r.ownMemberLease(members)); err != nil {
		logger.Error(err, "renewing this replica's member Lease; it stops writing after the renew deadline", "renewDeadline", r.o.RenewDeadline)
	}
	r.mu.Lock()
	alive := r.alive(members, buckets, listed)
	desired := Assign(slices.Sorted(maps.Keys(alive)))
	r.desired = Owned(desired, r.o.Identity)
	r.mu.Unlock()
	r.assignedOnce.Do(func() { close(r.assigned) })
	for b := range Bucket(Buckets) {
		if r.now().Sub(listed) > r.o.RenewDeadline/2 {
			// Many Lease writes, or slow ones: renew first, the rest next round,
			// so that they never cost this replica its membership.
			logger.V(1).Info("round cut short to renew in time", "bucket", b.String())
			break
		}
		if err := r.balance(ctx, b, desired[b], buckets[b], alive); err != nil {
			logger.V(1).Info("bucket not balanced this round", "bucket", b.String(), "reason", err.Error())
		}
	}
}

// ownMemberLease is this replica's member Lease among members, or nil.
func (r *Ring) ownMemberLease(members []coordinationv1.Lease) *coordinationv1.Lease {
	for i := range members {
		if members[i].Name == r.memberLeaseName() {
			return members[i].DeepCopy()
		}
	}
	return nil
}

// renewMember renews this replica's member Lease, as just listed, or creates
// it when there is none.
//
// A renewal extends this replica's claim to RenewDeadline after it was sent:
// the others count it alive until a lease duration after they see it change,
// which is no earlier. But the buckets it holds were read from a list that
// may be older than that. They are still its own only if the renewal
// succeeded before the previous one could have expired in the others' eyes
// (less than a lease duration after it was sent): then no other replica can
// have counted it dead meanwhile, and taken its buckets. Otherwise every
// bucket it holds is verified again (balance) before it writes it.
func (r *Ring) renewMember(ctx context.Context, lease *coordinationv1.Lease) error {
	start := r.now()
	leases := r.leases.Leases(r.o.Namespace)
	var err error
	if lease == nil {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: r.memberLeaseName(), Namespace: r.o.Namespace,
			Labels: map[string]string{RingLabel: r.o.Ring, KindLabel: "member"}}}
		r.stamp(lease, start, false)
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else {
		r.stamp(lease, start, false)
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.renewed.IsZero() || r.now().Sub(r.renewed) >= r.o.LeaseDuration {
		for _, h := range r.held {
			h.verified = false
		}
	}
	r.renewed = start // when the request was sent: the others saw the renewal no earlier
	return nil
}

// stamp makes lease this replica's as of now; acquired counts a new holder.
func (r *Ring) stamp(lease *coordinationv1.Lease, now time.Time, acquired bool) {
	micro := metav1.NewMicroTime(now)
	lease.Spec.HolderIdentity = ptr.To(r.o.Identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(r.o.LeaseDuration / time.Second))
	lease.Spec.RenewTime = &micro
	if acquired || lease.Spec.AcquireTime == nil {
		lease.Spec.AcquireTime = &micro
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
}

// list returns the ring's member Leases and its bucket Leases by bucket.
func (r *Ring) list(ctx context.Context) ([]coordinationv1.Lease, map[Bucket]*coordinationv1.Lease, error) {
	list, err := r.leases.Leases(r.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: RingLabel + "=" + r.o.Ring})
	if err != nil {
		return nil, nil, err
	}
	var members []coordinationv1.Lease
	buckets := map[Bucket]*coordinationv1.Lease{}
	for i := range list.Items {
		lease := &list.Items[i]
		switch lease.Labels[KindLabel] {
		case "member":
			members = append(members, *lease)
		case "bucket":
			for b := range Bucket(Buckets) {
				if lease.Name == r.bucketLeaseName(b) {
					buckets[b] = lease
				}
			}
		}
	}
	return members, buckets, nil
}

// alive is the set of identities counted as live members: this replica while
// its renewals are recent, and any other whose member Lease changed less than
// LeaseDuration before listed (when the list was sent, on this replica's
// clock) after this replica first saw its current version. Judged as of when
// the list was sent, not when its answer came: a late answer may predate a
// renewal that another member made in time. A holder of a bucket with no
// member Lease is given LeaseDuration from when that was first seen. A
// member whose Lease is gone and who holds no bucket has left (a clean stop
// releases its buckets, then deletes its Lease): it is forgotten at once, so
// its buckets are taken without waiting. r.mu must be held.
func (r *Ring) alive(members []coordinationv1.Lease, buckets map[Bucket]*coordinationv1.Lease, listed time.Time) map[string]bool {
	now := r.now()
	inList, holders := map[string]bool{}, map[string]bool{}
	for _, m := range members {
		id := ptr.Deref(m.Spec.HolderIdentity, "")
		inList[id] = true
		if seen, ok := r.seen[id]; id != "" && (!ok || seen.resourceVersion != m.ResourceVersion) {
			r.seen[id] = observation{resourceVersion: m.ResourceVersion, at: now}
		}
	}
	for _, lease := range buckets {
		if id := ptr.Deref(lease.Spec.HolderIdentity, ""); id != "" {
			holders[id] = true
			if _, ok := r.seen[id]; !ok {
				r.seen[id] = observation{at: now}
			}
		}
	}
	alive := map[string]bool{}
	for id, seen := range r.seen {
		switch {
		case !inList[id] && !holders[id]:
			delete(r.seen, id)
		case id != r.o.Identity && listed.Sub(seen.at) < r.o.LeaseDuration:
			alive[id] = true
		}
	}
	if r.renewedRecently() && !r.stopping {
		alive[r.o.Identity] = true
	}
	return alive
}

// balance takes bucket b if this replica is its desired owner and it is free
// or its holder is dead, and starts handing it on if not.
func (r *Ring) balance(ctx context.Context, b Bucket, desired string, lease *coordinationv1.Lease, alive map[string]bool) error {
	me := r.o.Identity
	holder := ""
	if lease != nil {
		holder = ptr.Deref(lease.Spec.HolderIdentity, "")
	}
	r.mu.Lock()
	h := r.held[b]
	if h != nil && holder != me {
		// Taken while this replica could not renew (it had stopped writing by then).
		delete(r.held, b)
		h = nil
	}
	if h == nil && holder == me {
		// This replica's, as far as this list says: from before a restart of
		// its container (the same pod name). Verified before it is written.
		h = &heldBucket{resourceVersion: lease.ResourceVersion}
		r.held[b] = h
	}
	if h != nil && desired == me && h.draining {
		// Handed back before the hand-over was done (its release failed):
		// abandoned. Verified again before it is written, as the release may
		// have landed after all.
		h.draining, h.verified = false, false
	}
	verify := h != nil && !h.verified
	mayTake := r.renewedRecently() && !r.stopping
	r.mu.Unlock()
	switch {
	case desired == me && h == nil:
		if holder != "" && alive[holder] {
			return fmt.Errorf("held by live member %s, which hands it on once its writes end", holder)
		}
		if !mayTake {
			return fmt.Errorf("this replica's membership is not renewed")
		}
		return r.acquire(ctx, b, lease)
	case desired != me && h != nil:
		return r.handOn(ctx, b, lease)
	case verify:
		if !mayTake {
			return fmt.Errorf("this replica's membership is not renewed")
		}
		return r.confirm(ctx, b, lease)
	}
	return nil
}

// confirm writes bucket b's Lease, which names this replica (lease, as
// listed), with its listed version as the precondition: if it succeeds, no
// other replica took the bucket since the list, and none can take it from
// now on without seeing this write, so the bucket is verified.
func (r *Ring) confirm(ctx context.Context, b Bucket, lease *coordinationv1.Lease) error {
	lease = lease.DeepCopy()
	r.stamp(lease, r.now(), false)
	lease, err := r.leases.Leases(r.o.Namespace).Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("confirming this replica still holds it: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.held[b]; h != nil && !h.draining {
		h.resourceVersion, h.verified = lease.ResourceVersion, true
	}
	return nil
}

// acquire makes bucket b's Lease this replica's; lease is its current
// version (nil: none yet). A concurrent change fails the update, and the next
// round sees it.
func (r *Ring) acquire(ctx context.Context, b Bucket, lease *coordinationv1.Lease) error {
	leases := r.leases.Leases(r.o.Namespace)
	var err error
	if lease == nil {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: r.bucketLeaseName(b), Namespace: r.o.Namespace,
			Labels: map[string]string{RingLabel: r.o.Ring, KindLabel: "bucket"}}}
		r.stamp(lease, r.now(), true)
		lease, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else {
		lease = lease.DeepCopy()
		r.stamp(lease, r.now(), true)
		lease, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.held[b] = &heldBucket{resourceVersion: lease.ResourceVersion, verified: true}
	r.mu.Unlock()
	return nil
}

// handOn stops admitting writes to bucket b and, once those in flight have
// ended, releases its Lease for the desired owner to take at once.
func (r *Ring) handOn(ctx context.Context, b Bucket, lease *coordinationv1.Lease) error {
	r.mu.Lock()
	h := r.held[b]
	h.draining = true
	inflight := h.inflight
	r.mu.Unlock()
	if inflight > 0 {
		return fmt.Errorf("%d writes still in flight", inflight)
	}
	return r.release(ctx, b, lease)
}

// release empties bucket b's Lease (lease is its current version) and forgets it.
func (r *Ring) release(ctx context.Context, b Bucket, lease *coordinationv1.Lease) error {
	lease = lease.DeepCopy()
	lease.Spec.HolderIdentity = ptr.To("")
	if _, err := r.leases.Leases(r.o.Namespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.held, b)
	r.mu.Unlock()
	return nil
}

// notify calls the OnChange function if this replica's Share changed since the last call.
func (r *Ring) notify() {
	r.mu.Lock()
	share, f := Share{Held: r.heldLocked(), Desired: slices.Clone(r.desired), Unwritable: r.unwritableLocked()}, r.onChange
	changed := !share.equal(r.notified)
	r.notified = share
	r.mu.Unlock()
	if changed && f != nil {
		f(share)
	}
}

// stop refuses new writes, waits for those in flight, releases every bucket
// and deletes the member Lease, so that the others take over at once. What it
// cannot release before ctx ends, the others take after LeaseDuration.
func (r *Ring) stop(ctx context.Context) error {
	r.mu.Lock()
	r.stopping, r.desired = true, nil
	r.mu.Unlock()
	for r.inflight() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("sharding: %d writes still in flight at stop; the buckets are left to expire", r.inflight())
		case <-time.After(10 * time.Millisecond):
		}
	}
	_, buckets, err := r.list(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range r.Held() {
		if lease := buckets[b]; lease != nil && ptr.Deref(lease.Spec.HolderIdentity, "") == r.o.Identity {
			errs = append(errs, r.release(ctx, b, lease))
		}
	}
	err = r.leases.Leases(r.o.Namespace).Delete(ctx, r.memberLeaseName(), metav1.DeleteOptions{})
	errs = append(errs, client.IgnoreNotFound(err))
	r.notify()
	return errors.Join(errs...)
}

func (r *Ring) inflight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.held {
		n += h.inflight
	}
	return n
}
