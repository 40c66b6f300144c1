package access

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/config"
)

// Forbidden is a watch the identity may not list: served without it, reported by name.
type Forbidden struct {
	Watch config.ResolvedWatch
	Err   error // names the watch, the kind and the missing permission
}

// Check lists one object of every watch, with the watch's own selectors,
// before any informer starts. An informer would retry a rejected selector or a
// forbidden list forever and the cache would never sync; Check instead names
// the watch, the field and the fix. It tells forbidden watches apart: a
// running metawatch serves the other kinds and reports these, while any other
// error (a selector the server rejects, an unreachable server) fails the whole
// configuration.
func Check(ctx context.Context, cfg *rest.Config, watches []config.ResolvedWatch) (allowed []config.ResolvedWatch, forbidden []Forbidden, err error) {
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating metadata client: %w", err)
	}
	var errs []error
	for _, w := range watches {
		werr := preflightWatch(ctx, client, w)
		switch {
		case werr == nil:
			allowed = append(allowed, w)
		case apierrors.IsForbidden(werr):
			forbidden = append(forbidden, Forbidden{Watch: w, Err: werr})
		default:
			errs = append(errs, werr)
		}
	}
	return allowed, forbidden, errors.Join(errs...)
}

func preflightWatch(ctx context.Context, client metadata.Interface, w config.ResolvedWatch) error {
	opts := metav1.ListOptions{Limit: 1, LabelSelector: w.Label.String(), FieldSelector: w.Field.String()}
	for _, ns := range namespacesToCheck(w) {
		_, err := client.Resource(w.Resource).Namespace(ns).List(ctx, opts)
		if err != nil {
			return explainListError(w, ns, err)
		}
	}
	return nil
}

// namespacesToCheck is "" (all namespaces, or a cluster-scoped kind) or the watch's namespaces.
func namespacesToCheck(w config.ResolvedWatch) []string {
	if len(w.Namespaces) == 0 {
		return []string{""}
	}
	return w.Namespaces
}

func explainListError(w config.ResolvedWatch, ns string, err error) error {
	where := "cluster-wide"
	if ns != "" {
		where = "in namespace " + ns
	}
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s (%s): forbidden to list %s %s: grant the identity list and watch on %s: %w",
			w.Path, w.GVK.Kind, w.Resource.GroupResource(), where, w.Resource.GroupResource(), err)
	case apierrors.IsBadRequest(err) && !w.Field.Empty():
		return config.Invalid(fmt.Errorf("%s.fieldSelector %q: the API server rejects it for %s (each kind supports only some fields, "+
			"e.g. metadata.name, metadata.namespace): %w", w.Path, w.Field.String(), w.GVK.Kind, err))
	case apierrors.IsBadRequest(err) || apierrors.IsInvalid(err):
		return config.Invalid(fmt.Errorf("%s (%s): the API server rejects this watch: %w", w.Path, w.GVK.Kind, err))
	default: // transient: unreachable, overloaded, a server error
		return fmt.Errorf("%s (%s): listing %s %s: %w", w.Path, w.GVK.Kind, w.Resource.GroupResource(), where, err)
	}
}
