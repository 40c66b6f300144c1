package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metawatch/metawatch/pkg/acceptance"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/preview"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
)

// reportPageSize is how many objects one list page of the report holds:
// the report's memory is a page, the sources and the tally.
const reportPageSize = 500

// checkReport is metawatch check --live --report: the objects of the
// watched kinds that are not as the rules want, grouped by rule and
// namespace, from metadata-only lists (paginated, protobuf), read-only.
func checkReport(ctx context.Context, out io.Writer, o options) (int, error) {
	conf, err := config.ParseFile(o.file)
	if err != nil {
		return 1, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return 1, err
	}
	accepted, _, err := acceptance.Accept(ctx, cfg, conf, &o.limits)
	if err != nil {
		return 1, err
	}
	watches := accepted.Watches
	mc, err := metadata.NewForConfig(metadata.ConfigFor(cfg))
	if err != nil {
		return 1, err
	}
	lookup, err := clusterLookup(cfg)
	if err != nil {
		return 1, err
	}
	p, err := preview.New(preview.Options{Config: conf, Scopes: []*config.WriteScope{&o.limits.WriteScope}, Guardrails: &o.limits, Identity: o.identity, Lookup: lookup})
	if err != nil {
		return 1, err
	}
	tally := &preview.Tally{}
	var reps *openReports
	if o.output == outputOpenReports {
		reps = newOpenReports(o.identity, o.reportResults, time.Now())
	}
	for _, w := range watches { // the sources first: the Namespaces and owners copied from
		if w.Owner || (w.GVK.Kind == "Namespace" && config.CopiesFromNamespaces(conf)) {
			if err := listWatch(ctx, mc, w, func(obj *metav1.PartialObjectMetadata) error { p.AddSource(obj); return nil }); err != nil {
				return 1, err
			}
		}
	}
	for _, w := range watches {
		if w.OwnersOnly || !p.HasRules(w.GVK.Kind) {
			continue
		}
		err := listWatch(ctx, mc, w, func(obj *metav1.PartialObjectMetadata) error {
			r, err := p.Report(ctx, obj)
			tally.Add(r)
			if reps != nil {
				reps.add(obj, r)
			}
			return err
		})
		if err != nil {
			return 1, err
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 1, err
	}
	fights := listFights(ctx, cs, rulecontroller.ReasonOwnershipFight, time.Now())
	switch o.output {
	case outputOpenReports:
		_, err = reps.write(out)
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			Groups     []preview.Group     `json:"groups"`
			Objects    int                 `json:"objects"`
			Off        int                 `json:"notAsWanted"`
			WouldWrite int                 `json:"wouldWrite"`
			Offending  int                 `json:"offending"`
			Brake      []preview.BrakeLine `json:"removalBrake"`
			Fights     Fights              `json:"ownershipFights"`
		}{tally.Groups(), tally.Objects, tally.Off, tally.Change, tally.Offend, tally.Brake(o.removalBrake), fights})
	default:
		err = errors.Join(tally.WriteText(out), tally.WriteBrake(out, o.removalBrake), fights.write(out))
	}
	if err != nil {
		return 1, err
	}
	return exitCode(tally.Change > 0, tally.Offend > 0), nil
}

// listWatch lists w's objects, page by page, metadata only, and gives each
// to each (its kind set, which list items lack).
func listWatch(ctx context.Context, mc metadata.Interface, w config.ResolvedWatch, each func(*metav1.PartialObjectMetadata) error) error {
	namespaces := w.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		opts := metav1.ListOptions{LabelSelector: w.Label.String(), FieldSelector: w.Field.String(), Limit: reportPageSize}
		for {
			page, err := mc.Resource(w.Resource).Namespace(ns).List(ctx, opts)
			if err != nil {
				return fmt.Errorf("listing %s: %w", w.Resource.GroupResource(), err)
			}
			for i := range page.Items {
				page.Items[i].SetGroupVersionKind(w.GVK)
				if err := each(&page.Items[i]); err != nil {
					return err
				}
			}
			if opts.Continue = page.Continue; opts.Continue == "" {
				break
			}
		}
	}
	return nil
}
