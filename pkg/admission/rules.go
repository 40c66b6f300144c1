package admission

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metawatch/metawatch/pkg/config"
)

// Rules are the admission rules of conf's rules with atCreation, each on the
// resources of its kinds as watches resolve them (a kind not among them, e.g.
// one RBAC forbids listing, gets no policy: the controller could not keep
// what the policy wrote), within every one of scopes.
func Rules(conf *config.Config, watches []config.ResolvedWatch, scopes ...*config.WriteScope) []Rule {
	resources := map[string]Resource{}
	for _, w := range watches {
		if w.OwnersOnly {
			continue // no rule names it: a configured watch of the name is the rules' (a custom Deployment beside the implicit apps one)
		}
		resources[w.GVK.Kind] = Resource{GroupVersionResource: w.Resource, Namespaced: w.Namespaced, Namespaces: w.Namespaces, Label: w.Label, Field: w.Field}
	}
	var out []Rule
	for _, r := range conf.Rules {
		if !r.AtCreation {
			continue
		}
		ar := Rule{Name: r.Name, SetLabels: r.SetLabels, SetAnnotations: r.SetAnnotations, Force: r.Force, Scopes: scopes}
		if r.Match != nil {
			ar.Match, _ = labels.Parse(r.Match.LabelSelector) // validated with the configuration
		}
		if c := r.CopyFromNamespace; c != nil {
			ar.CopyLabels, ar.CopyAnnotations = c.Labels, c.Annotations
		}
		for _, kind := range r.KindNames() {
			if res, ok := resources[kind]; ok {
				ar.Resources = append(ar.Resources, res)
			}
		}
		if len(ar.Resources) > 0 {
			out = append(out, ar)
		}
	}
	return out
}
