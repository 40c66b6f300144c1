package authority

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patcher is the one write verb metawatch uses on watched objects: patch
// (merge or apply).
type Patcher interface {
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error
}

// Writer patches through the guard. It has no other verb: a write
// that did not pass it could not be written by mistake. obj must carry the
// uid of the object written.
type Writer struct {
	client Patcher
	guard  Guard
}

// NewWriter returns the writer of c's patches through guard.
func NewWriter(c Patcher, guard Guard) Writer { return Writer{client: c, guard: guard} }

// Patch sends the patch if the guard admits a write of obj, and notes the
// version it produced as this process's own (Identity.Wrote): a later
// change to the field manager's keys that no such write made is another
// writer's.
func (w Writer) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	uid := obj.GetUID()
	err := w.guard.Write(ctx, uid, func(ctx context.Context) error { return w.client.Patch(ctx, obj, patch, opts...) })
	if err == nil {
		w.guard.Identity.Wrote(uid, obj.GetResourceVersion())
	}
	return err
}
