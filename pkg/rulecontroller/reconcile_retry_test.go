package rulecontroller

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/authority/pace"
)

// A write the pace would have held past its deadline (a 429's pause) is
// tried again once the pause is over: not with the error backoff, which
// would retry it within milliseconds while the pause lasts and count it
// failed, nor every ShardPendingRetry.
func TestAWriteNotSentForThePaceIsTriedAgainAfterThePause(t *testing.T) {
	paused := &url.Error{Op: "Patch", URL: "https://api/x", Err: &pace.WaitError{Wait: 27 * time.Second, Deadline: 4 * time.Second,
		Pause: &pace.Pause{Asked: time.Hour, Max: 30 * time.Second}}}
	for name, tc := range map[string]struct {
		err     error
		want    reconcile.Result
		wantErr bool
	}{
		"paused 27s more":           {err: paused, want: reconcile.Result{RequeueAfter: 27 * time.Second}},
		"a remove and apply joined": {err: errors.Join(paused, nil), want: reconcile.Result{RequeueAfter: 27 * time.Second}},
		"a claim that lapsed":       {err: authority.ErrLapsed, want: reconcile.Result{RequeueAfter: authority.ShardPendingRetry}},
		"a failure":                 {err: errors.New("connection reset"), wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			k := &kindReconciler{reader: absent{}, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, steps: []step{failing{tc.err}}}
			got, err := k.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}})
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Reconcile = %+v, %v; want %+v and an error: %t", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// failing is a step whose write ends in err.
type failing struct{ err error }

func (f failing) reconcileObject(context.Context, types.NamespacedName, *metav1.PartialObjectMetadata) error {
	return f.err
}

// absent is a cache that holds nothing.
type absent struct{}

func (absent) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, key.Name)
}

func (absent) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }
