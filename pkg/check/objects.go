package check

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metawatch/metawatch/pkg/acceptance"
	"github.com/metawatch/metawatch/pkg/apiserver"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/preview"
)

// Exit codes of metawatch check --objects, for a CI pipeline: every object
// is as the rules want (0), metawatch would write some (3), some fail a
// requirement or hold a key another manager owns (4), or both (5). 1 is a
// configuration or input error, 2 a usage error, as for every check.
const (
	exitWouldWrite = 3
	exitOffends    = 4
	exitBoth       = 5
)

// exitCode is the exit code when metawatch would write, or objects offend.
func exitCode(write, offend bool) int {
	switch {
	case write && offend:
		return exitBoth
	case write:
		return exitWouldWrite
	case offend:
		return exitOffends
	}
	return 0
}

// checkObjects is metawatch check --objects: what the configuration's
// rules would do to the objects of files, with their Namespaces and owners
// from the same files or, with --live, from the cluster (read-only).
//
// Its memory does not grow with the files (a List of a million pods):
// they are read twice, an object at a time. A Namespace or an owner may
// come after the objects that need it (kubectl get -o yaml sorts by kind
// and name, and files are given in any order), so the first pass checks
// every object and keeps of the Namespaces and the owner chains' kinds
// only what the rules read (Previewer.AddSource); the second reports on
// each object as it is read, and writes its report at once. An input
// error is found by the first pass, before anything is written.
func checkObjects(ctx context.Context, out io.Writer, o options) (int, error) {
	conf, err := config.ParseFile(o.file)
	if err != nil {
		return 1, err
	}
	opts := preview.Options{Config: conf, Scopes: []*config.WriteScope{&o.limits.WriteScope}, Guardrails: &o.limits, Identity: o.identity}
	if o.live {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return 1, err
		}
		if opts.Lookup, err = clusterLookup(cfg); err != nil {
			return 1, err
		}
		// With a cluster, accepted as the controller would: the kinds'
		// groups and scopes are its discovery's.
		if _, _, err := acceptance.Accept(ctx, cfg, conf, &o.limits); err != nil {
			return 1, err
		}
	} else if err := acceptance.Offline(conf, &o.limits); err != nil {
		return 1, err
	}
	p, err := preview.New(opts)
	if err != nil {
		return 1, err
	}
	inputs, err := preview.OpenInputs(o.objects, os.Stdin)
	if err != nil {
		return 1, fmt.Errorf("--objects: %w", err)
	}
	defer func() { _ = inputs.Close() }()
	selected := preview.SelectorFields(conf)
	err = inputs.Each(selected, func(obj *unstructured.Unstructured) error { p.AddSource(obj); return nil })
	if err != nil {
		return 1, fmt.Errorf("--objects: %w", err)
	}
	if o.output == outputOpenReports {
		reps := newOpenReports(o.identity, o.reportResults, time.Now())
		err = inputs.Each(selected, func(obj *unstructured.Unstructured) error {
			r, err := p.Report(ctx, obj)
			reps.add(obj, r)
			return err
		})
		if err != nil {
			return 1, err
		}
		s, err := reps.write(out)
		if err != nil {
			return 1, err
		}
		return exitCode(s.Change > 0, s.Offend > 0), nil
	}
	w := preview.NewWriter(out, o.output)
	err = inputs.Each(selected, func(obj *unstructured.Unstructured) error {
		r, err := p.Report(ctx, obj)
		if err != nil {
			return err
		}
		return w.Write(r)
	})
	if err != nil {
		return 1, err
	}
	s, err := w.Close()
	if err != nil {
		return 1, err
	}
	return exitCode(s.Change > 0, s.Offend > 0), nil
}

// lookup reads Namespaces and owners from the cluster, metadata only.
type lookup struct {
	client metadata.Interface
	mapper meta.RESTMapper
}

func clusterLookup(cfg *rest.Config) (preview.Lookup, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiserver.NewRESTMapper(cfg)
	if err != nil {
		return nil, err
	}
	return lookup{client: mc, mapper: mapper}, nil
}

func (l lookup) Namespace(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error) {
	return orNone(l.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, name, metav1.GetOptions{}))
}

func (l lookup) Owner(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("owner reference %s %s: %w", ref.Kind, ref.Name, err)
	}
	mapping, err := l.mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if meta.IsNoMatchError(err) {
		return nil, nil // a kind the cluster does not serve: no such owner
	}
	if err != nil {
		return nil, err
	}
	return orNone(l.client.Resource(mapping.Resource).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{}))
}

func orNone(obj *metav1.PartialObjectMetadata, err error) (*metav1.PartialObjectMetadata, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}
