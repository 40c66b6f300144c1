package authority

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metawatch/metawatch/pkg/authority/pace"
)

func TestClassify(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	status := func(code int32, reason metav1.StatusReason, message string, causes ...metav1.StatusCause) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason,
			Message: message, Details: &metav1.StatusDetails{Causes: causes}}}
	}
	for name, c := range map[string]struct {
		err  error
		want Outcome
	}{
		"no error is written":                                {nil, Written},
		"a closed fence is not sent":                         {errFenced, NotSent},
		"another replica's bucket is not sent":               {fmt.Errorf("patch: %w", errNotOurs), NotSent},
		"a bucket on its way here is sent soon":              {errShardPending, SendSoon},
		"a lapsed claim is sent soon":                        {fmt.Errorf("send: %w", ErrLapsed), SendSoon},
		"a 404 is gone":                                      {apierrors.NewNotFound(pods, "web"), Gone},
		"an apply's uid mismatch is gone":                    {apierrors.NewConflict(pods, "web", errors.New("uid mismatch: the object was replaced")), Gone},
		"a 422 on metadata.uid is gone":                      {apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "x", "mismatch")}), Gone},
		"a 422 on another field failed":                      {apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web", field.ErrorList{field.Invalid(field.NewPath("metadata", "labels"), "x", "bad")}), Failed},
		"a resourceVersion precondition failure is stale":    {apierrors.NewConflict(pods, "web", errors.New("the object has been modified")), Stale},
		"an apply's field manager conflict is a conflict":    {status(409, metav1.StatusReasonConflict, "Apply failed with 1 conflict", metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Field: ".metadata.labels.team"}), Conflict},
		"a 409 with causes of another type is stale":         {status(409, metav1.StatusReasonConflict, "modified", metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid}), Stale},
		"a 403 failed":                                       {apierrors.NewForbidden(pods, "web", errors.New("no")), Failed},
		"an error that is not the API server's failed":       {errors.New("connection reset"), Failed},
		"a 429 failed (the pacer and client-go retry those)": {apierrors.NewTooManyRequests("slow down", 1), Failed},
		"a write the pace would hold past its deadline is sent soon": {
			&url.Error{Op: "Patch", URL: "https://api/x", Err: &pace.WaitError{Wait: 30 * time.Second, Deadline: 4 * time.Second, Pause: &pace.Pause{Asked: time.Hour, Max: 30 * time.Second}}}, SendSoon},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Classify(c.err); got != c.want {
				t.Errorf("Classify(%v) = %s, want %s", c.err, got, c.want)
			}
		})
	}
}

// A write not sent for now is tried again when it may leave: once the
// pace lets it (a 429's pause, its turn at the rate; sooner it would be
// refused again), at the soonest after ShardPendingRetry.
func TestRetryIn(t *testing.T) {
	paused := &pace.WaitError{Wait: 27 * time.Second, Deadline: 4 * time.Second, Pause: &pace.Pause{Asked: time.Hour, Max: 30 * time.Second}}
	for name, c := range map[string]struct {
		err  error
		want time.Duration
	}{
		"a bucket on its way here":                   {errShardPending, ShardPendingRetry},
		"a lapsed claim":                             {ErrLapsed, ShardPendingRetry},
		"a write paused 27s more, through client-go": {&url.Error{Op: "Patch", URL: "https://api/x", Err: paused}, 27 * time.Second},
		"a removal paused, joined with an apply":     {errors.Join(paused, nil), 27 * time.Second},
		"a turn at the rate sooner than a retry":     {&pace.WaitError{Wait: 200 * time.Millisecond, Rate: 1000}, ShardPendingRetry},
	} {
		t.Run(name, func(t *testing.T) {
			if got := RetryIn(c.err); got != c.want {
				t.Errorf("RetryIn(%v) = %s, want %s", c.err, got, c.want)
			}
		})
	}
}
