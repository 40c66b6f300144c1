package scenario

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/bench/variant"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/metacache"
)

// convergeTimeout bounds one convergence: 10k pods take under a minute here.
const convergeTimeout = 30 * time.Minute

// Converge sets the namespace's label to value and returns how long it took
// until the observer saw every pod of it carry value (the running variant's work).
func Converge(ctx context.Context, c client.Client, o *Observer, namespace, value string) (time.Duration, error) {
	o.expect(value)
	start := time.Now()
	if err := labelNamespace(ctx, c, namespace, o.label, value); err != nil {
		return 0, err
	}
	if err := o.waitAll(ctx, value, convergeTimeout); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// Bare is Converge with no variant running: the harness makes the same
// metadata-only applies itself, as metawatch's field manager, with
// concurrency workers. It is the reference a variant's convergence is held to.
func Bare(ctx context.Context, c client.Client, o *Observer, namespace, value string, concurrency int) (time.Duration, error) {
	o.expect(value)
	start := time.Now()
	if err := labelNamespace(ctx, c, namespace, o.label, value); err != nil {
		return 0, err
	}
	pods := o.Pods()
	err := seed.ForEach(ctx, len(pods), concurrency, func(i int) error {
		return applyLabel(ctx, c, o.label, namespace, pods[i], value)
	})
	if err != nil {
		return 0, err
	}
	if err := o.waitAll(ctx, value, convergeTimeout); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// applyLabel is the rule's write to one pod, made by the harness: the
// label alone, applied as metawatch's field manager.
func applyLabel(ctx context.Context, c client.Client, label, namespace, name, value string) error {
	body := variant.ApplyBody(label, namespace, name, value)
	target := metacache.NewObject(corev1.SchemeGroupVersion.WithKind("Pod"))
	target.Namespace, target.Name = namespace, name
	return c.Patch(ctx, target, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(authority.DefaultFieldManager))
}

func labelNamespace(ctx context.Context, c client.Client, namespace, label, value string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, label, value)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("labelling namespace %s: %w", namespace, err)
	}
	return nil
}
