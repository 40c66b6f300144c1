package authority

import (
	"errors"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metawatch/metawatch/pkg/authority/pace"
)

// Outcome is what became of a write, sorted the way every writer acts on
// it: the rules' applies and removals, adoption, and the admission
// policies' creates, updates and deletes all decide from it alone.
type Outcome int

const (
	// Written means the API server took the write.
	Written Outcome = iota
	// NotSent means not sent, on purpose and for good: the generation is
	// stopping, or another replica holds the object's bucket and writes it.
	NotSent
	// SendSoon means not sent for now: the object's bucket is coming to this
	// replica, or this replica's claim lapsed (a renewal, or another
	// holder, settles it within the lease duration), or the write pace
	// would have held it past its deadline (a 429's pause, or its turn at
	// the rate: the server is busy, nothing is wrong with the write). Tried
	// again after RetryIn, not with the error backoff, and not counted as a
	// failure.
	SendSoon
	// Gone means the object written no longer exists under the uid written:
	// deleted (404, or 409 "uid mismatch" from an apply), or its name taken
	// by a new object (422 on metadata.uid). The watch brings the deletion
	// or the new object, which is decided on its own.
	Gone
	// Stale means the object changed since it was read (the resourceVersion
	// precondition failed): decided again on the object as it is now.
	Stale
	// Conflict means server-side apply refused fields another field manager owns.
	Conflict
	// Failed means any other error.
	Failed
)

// Classify sorts a write's error into its Outcome.
func Classify(err error) Outcome {
	switch {
	case err == nil:
		return Written
	case errors.Is(err, errFenced), errors.Is(err, errNotOurs), errors.Is(err, ErrSharedName):
		return NotSent
	case errors.Is(err, errShardPending), errors.Is(err, ErrLapsed), errors.As(err, new(*pace.WaitError)):
		return SendSoon
	case gone(err):
		return Gone
	case fieldManagerConflict(err):
		return Conflict
	case apierrors.IsConflict(err):
		return Stale
	}
	return Failed
}

// RetryIn is how soon a write whose outcome is SendSoon is tried again:
// once the write pace lets it leave (the 429's pause is over, or its turn
// at the rate has come; sooner, it would be refused again), and otherwise
// after ShardPendingRetry.
func RetryIn(err error) time.Duration {
	var late *pace.WaitError
	if errors.As(err, &late) {
		return max(ShardPendingRetry, late.RetryIn())
	}
	return ShardPendingRetry
}

// String is the outcome as logs and tests name it.
func (o Outcome) String() string {
	switch o {
	case Written:
		return "written"
	case NotSent:
		return "not sent"
	case SendSoon:
		return "send soon"
	case Gone:
		return "gone"
	case Stale:
		return "stale"
	case Conflict:
		return "conflict"
	}
	return "failed"
}

// gone reports whether err says the object written no longer exists under
// the uid written (see Gone).
func gone(err error) bool {
	var status apierrors.APIStatus
	switch {
	case !errors.As(err, &status):
		return false
	case apierrors.IsNotFound(err):
		return true
	case apierrors.IsConflict(err):
		return strings.Contains(status.Status().Message, "uid mismatch")
	case apierrors.IsInvalid(err) && status.Status().Details != nil:
		for _, c := range status.Status().Details.Causes {
			if c.Field == "metadata.uid" {
				return true
			}
		}
	}
	return false
}

// fieldManagerConflict reports whether err is a server-side apply conflict:
// a 409 naming fields another field manager owns.
func fieldManagerConflict(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == metav1.CauseTypeFieldManagerConflict {
			return true
		}
	}
	return false
}
