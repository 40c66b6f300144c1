package check

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/sizing"
)

// countPage is how many objects one page of the count lists: metadata only.
const countPage = 5000

// recommendSizing prints how many objects the watches select on the cluster
// now (what metawatch would cache) and the memory request and limit
// package sizing recommends for them, with the chart value that sets both.
func recommendSizing(ctx context.Context, out io.Writer, cfg *rest.Config, watches []config.ResolvedWatch) error {
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	perKind := map[string]int64{}
	var total int64
	for _, w := range watches {
		n, err := countWatched(ctx, client, w)
		if err != nil {
			return fmt.Errorf("counting the objects of %s (%s) for the sizing: %w", w.Path, w.GVK.Kind, err)
		}
		perKind[w.GVK.Kind] += n
		total += n
	}
	kinds := make([]string, 0, len(perKind))
	for kind, n := range perKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", kind, n))
	}
	sort.Strings(kinds)
	r := sizing.For(total)
	fmt.Fprintf(out, "sizing: %d objects watched now (%s): memory request %s, limit %s "+
		"(the chart: --set sizing.expectedObjects=%d; docs/sizing.md; allow for growth)\n",
		total, strings.Join(kinds, ", "), r.Request(), r.Limit(), total)
	return nil
}

// countWatched counts the objects w selects: in each of its namespaces (or
// all), with its selectors. The API server says how many remain after the
// first page when the list is not filtered; a filtered one is paged through.
func countWatched(ctx context.Context, client metadata.Interface, w config.ResolvedWatch) (int64, error) {
	namespaces := w.Namespaces
	if !w.Namespaced || len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	opts := metav1.ListOptions{Limit: countPage}
	if w.Label != nil && !w.Label.Empty() {
		opts.LabelSelector = w.Label.String()
	}
	if w.Field != nil && !w.Field.Empty() {
		opts.FieldSelector = w.Field.String()
	}
	var total int64
	for _, ns := range namespaces {
		list := opts
		for {
			page, err := client.Resource(w.Resource).Namespace(ns).List(ctx, list)
			if err != nil {
				return 0, err
			}
			total += int64(len(page.Items))
			if page.RemainingItemCount != nil {
				total += *page.RemainingItemCount
				break
			}
			if page.Continue == "" {
				break
			}
			list.Continue = page.Continue
		}
	}
	return total, nil
}
