package brake

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Record is what the brake keeps of an installation across restarts,
// failovers and rolling updates, shared by its replicas: per kind, how many
// objects the running configuration has let lose keys since its window
// began, and the changes held and approved. The operations on it are pure;
// the Ledger loads and saves it.
type Record struct {
	// Configuration is the hash of the configuration the counts are for;
	// Order orders the versions configurations come from (the selectors
	// ConfigMap's resourceVersion; 0: unknown, a file), so that a replica
	// still on an older configuration never takes the counts back.
	Configuration string `json:"configuration,omitempty"`
	Order         uint64 `json:"order,omitempty"`
	// Change is the number of the last change the brake held; Open: it
	// holds objects and has not been approved.
	Change int  `json:"change"`
	Open   bool `json:"open,omitempty"`
	// Kinds are the counts per kind.
	Kinds map[string]*KindCount `json:"kinds,omitempty"`
	// Approvals are the approvals used, newest last (at most maxApprovals).
	Approvals []Approval `json:"approvals,omitempty"`
}

// KindCount is one kind's count.
type KindCount struct {
	// Since is when the count began; it begins again a Window later, if
	// nothing is held.
	Since time.Time `json:"since"`
	// Removed is how many objects were let lose keys since: counted before
	// their write is sent (a reservation), so a process killed in between
	// over-counts, never under-counts.
	Removed int `json:"removed"`
	// Approved is how many objects approvals added to the bound since.
	Approved int `json:"approved,omitempty"`
	// HeldUntil: some replica held objects of the kind, and keeps pushing
	// this a Window ahead while it does; the count does not begin again
	// before it.
	HeldUntil time.Time `json:"heldUntil,omitzero"`
}

// Approval is one approval metawatch used.
type Approval struct {
	Token string    `json:"token"`
	At    time.Time `json:"at"`
	// Objects is how many held objects it let go on, over the replicas;
	// Kinds the same per kind (an operator's count bounds each kind).
	Objects int            `json:"objects"`
	Kinds   map[string]int `json:"kinds,omitempty"`
}

// maxApprovals bounds Record.Approvals.
const maxApprovals = 20

// clone is a deep copy of r.
func (r Record) clone() Record {
	out := r
	out.Kinds = make(map[string]*KindCount, len(r.Kinds))
	for k, c := range r.Kinds {
		cc := *c
		out.Kinds[k] = &cc
	}
	out.Approvals = slices.Clone(r.Approvals)
	for i := range out.Approvals {
		out.Approvals[i].Kinds = maps.Clone(out.Approvals[i].Kinds)
	}
	return out
}

// Token is the approval of change, held by the configuration hash: its
// first 12 hex digits and the change's number.
func Token(hash string, change int) string {
	return fmt.Sprintf("%s-%d", shortHash(hash), change)
}

func shortHash(hash string) string { return hash[:min(12, len(hash))] }

// claim makes r the record of configuration hash, from a version ordered
// order, and reports whether it is: a record of another configuration
// begins again (its counts are another change's), unless it comes from a
// newer version (order larger; 0 on either side: not known), which this
// replica will run soon too. The counts go on instead while a change is
// held (one mistake is one bound, whatever is edited before it is
// approved), and when either version is not known: replicas of a rolling
// update, on a file each, cannot tell the newer, and would otherwise begin
// the count again at each other's every write.
func (r *Record) claim(hash string, order uint64) bool {
	if r.Configuration == hash {
		return true
	}
	ordered := r.Configuration != "" && order != 0 && r.Order != 0
	if ordered && order < r.Order {
		return false
	}
	r.Configuration, r.Order = hash, order
	if ordered && !r.Open {
		r.Kinds = map[string]*KindCount{}
	}
	return true
}

// window is the clock of a record operation: now, the Window, and whether
// this process has itself watched for a whole Window (it may end a held
// change nobody refreshed: a process that has just started may not, or a
// crash loop would end every hold).
type window struct {
	now     time.Time
	length  time.Duration
	watched bool
}

// kind is kind's count, begun again if its window is over and nothing is
// held: a held change is over only once every replica has stopped pushing
// HeldUntil and a process has watched a whole Window since.
func (r *Record) kind(kind string, w window) *KindCount {
	if r.Kinds == nil {
		r.Kinds = map[string]*KindCount{}
	}
	k, ok := r.Kinds[kind]
	if !ok {
		k = &KindCount{Since: w.now}
		r.Kinds[kind] = k
		return k
	}
	if r.Open && w.watched && !r.holding(w.now) {
		r.Open = false // nobody holds it any more: the change lapsed unapproved
	}
	if w.now.Sub(k.Since) >= w.length && !w.now.Before(k.HeldUntil) && !r.Open {
		*k = KindCount{Since: w.now}
	}
	return k
}

// holding reports whether a replica holds objects of some kind at now.
func (r *Record) holding(now time.Time) bool {
	for _, k := range r.Kinds {
		if now.Before(k.HeldUntil) {
			return true
		}
	}
	return false
}

// remaining is how many more objects of k may lose keys under bound.
func (k *KindCount) remaining(bound int) int { return max(0, bound+k.Approved-k.Removed) }

// reserve counts up to want objects of kind against bound and returns how
// many it counted.
func (r *Record) reserve(kind string, bound, want int, w window) int {
	k := r.kind(kind, w)
	n := min(want, k.remaining(bound))
	k.Removed += n
	return n
}

// hold notes that objects of kind are held at w.now and returns the held
// change's number: the open one, or a new one. HeldUntil is pushed a Window
// ahead only once a quarter of it has passed, so that holding thousands of
// objects writes the record a few times, not once per object.
func (r *Record) hold(kind string, w window) int {
	k := r.kind(kind, w)
	if !r.Open {
		r.Change++
		r.Open = true
	}
	if k.HeldUntil.Sub(w.now) < w.length*3/4 {
		k.HeldUntil = w.now.Add(w.length)
	}
	return r.Change
}

// approve uses the approval of change for the objects of each kind in
// released (held by this replica when it was given), at most objects per
// kind over every replica if the operator named a count, and closes the
// change. It returns how many it let go per kind (nil: it does not apply).
// They are counted as removed and as approved at once: the approval covers
// those objects, and leaves no room a later change could use. Another
// replica may have used it already: then this replica's objects are added,
// within the operator's count.
func (r *Record) approve(token string, change int, released map[string]int, objects int, w window) map[string]int {
	used := slices.IndexFunc(r.Approvals, func(a Approval) bool { return a.Token == token })
	if used < 0 {
		if !r.Open || r.Change != change {
			return nil
		}
		r.Open = false
		r.Approvals = append(r.Approvals, Approval{Token: token, At: w.now})
		if len(r.Approvals) > maxApprovals {
			r.Approvals = r.Approvals[len(r.Approvals)-maxApprovals:]
		}
		used = len(r.Approvals) - 1
	}
	a := &r.Approvals[used]
	granted := map[string]int{}
	for _, kind := range slices.Sorted(maps.Keys(released)) {
		n := released[kind]
		if objects > 0 {
			n = min(n, objects-a.Kinds[kind])
		}
		if n <= 0 {
			continue
		}
		k := r.kind(kind, w)
		k.Approved += n
		k.Removed += n
		if a.Kinds == nil {
			a.Kinds = map[string]int{}
		}
		a.Kinds[kind] += n
		a.Objects += n
		granted[kind] = n
	}
	return granted
}

// used is the approval of token, if it was used.
func (r *Record) used(token string) (Approval, bool) {
	for _, a := range r.Approvals {
		if a.Token == token {
			return a, true
		}
	}
	return Approval{}, false
}
