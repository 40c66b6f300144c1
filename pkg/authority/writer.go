package authority

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patcher is the one write verb metawatch uses on watched objects: patch
// (merge or apply).
type Patcher interface {
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error
}

// Writer sends writes through the guard, as the guard's identity: every
// write it sends names the identity's field manager, so no caller sets it
// by hand. A caller's own client.FieldOwner, given after, wins: adoption
// releases the keys of the name it adopts as that name.
type Writer struct {
	client client.Writer
	guard  Guard
}

// NewWriter returns the writer of c's writes through guard.
func NewWriter(c client.Writer, guard Guard) Writer { return Writer{client: c, guard: guard} }

// Patch sends the patch if the guard admits a write of obj, and notes the
// version it produced as this process's own (Identity.Wrote): a later
// change to the field manager's keys that no such write made is another
// writer's. obj must carry the uid of the object written.
func (w Writer) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	uid := obj.GetUID()
	opts = append([]client.PatchOption{w.owner()}, opts...)
	err := w.guard.Write(ctx, uid, func(ctx context.Context) error { return w.client.Patch(ctx, obj, patch, opts...) })
	if err == nil {
		w.guard.Identity.Wrote(uid, obj.GetResourceVersion())
	}
	return err
}

// Create creates obj if the guard admits a write under key.
func (w Writer) Create(ctx context.Context, key types.UID, obj client.Object) error {
	return w.guard.Write(ctx, key, func(ctx context.Context) error { return w.client.Create(ctx, obj, w.owner()) })
}

// Update replaces obj if the guard admits a write under key.
func (w Writer) Update(ctx context.Context, key types.UID, obj client.Object) error {
	return w.guard.Write(ctx, key, func(ctx context.Context) error { return w.client.Update(ctx, obj, w.owner()) })
}

// owner names the identity's field manager on a write.
func (w Writer) owner() client.FieldOwner { return client.FieldOwner(w.guard.Identity.Name()) }
