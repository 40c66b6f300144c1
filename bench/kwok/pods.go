package kwok

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitRunning polls until kwok has made every pod matching selector Running,
// so that no variant's figures include the seed's tail of Pending-to-Running
// updates. kwok's pace depends on the machine (about 80 pods a second on two
// cores), so it fails only when no pod became Running for stall.
func (k *Kwok) WaitRunning(ctx context.Context, selector string, stall time.Duration, log io.Writer) error {
	sel, err := labels.Parse(selector)
	if err != nil {
		return err
	}
	best, lastProgress := -1, time.Now()
	for {
		pending, err := countNotRunning(ctx, k.client, sel)
		if err != nil || pending == 0 {
			return err
		}
		if best < 0 || pending < best {
			best, lastProgress = pending, time.Now()
			fmt.Fprintf(log, "kwok: %d pods not Running yet\n", pending)
		}
		if time.Since(lastProgress) > stall {
			return fmt.Errorf("%d pods are still not Running, and none became Running for %s (kwok's log: %s)", pending, stall, k.logPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
}

// countNotRunning counts the pods matching sel that are not Running, a page
// of metadata at a time.
func countNotRunning(ctx context.Context, c client.Client, sel labels.Selector) (int, error) {
	notRunning := fields.OneTermNotEqualSelector("status.phase", string(corev1.PodRunning))
	n := 0
	for cont := ""; ; {
		page := &metav1.PartialObjectMetadataList{}
		page.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := c.List(ctx, page, client.MatchingLabelsSelector{Selector: sel}, client.MatchingFieldsSelector{Selector: notRunning},
			client.Limit(5000), client.Continue(cont)); err != nil {
			return 0, err
		}
		n += len(page.Items)
		if cont = page.Continue; cont == "" {
			return n, nil
		}
	}
}
