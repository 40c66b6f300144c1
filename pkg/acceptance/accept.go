package acceptance

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/apiserver"
	"github.com/metawatch/metawatch/pkg/config"
)

// Step is a step of acceptance, in the order Accept takes them.
type Step int

const (
	// Resolved is passed when the kinds resolve against the cluster's discovery.
	Resolved Step = iota + 1
	// Guarded is passed when the configuration is within the operator's guardrails.
	Guarded
	// Sized is passed when every admission policy is within the API server's CEL size.
	Sized
	// Listed is passed when one object of each watch was listed, or its list is forbidden.
	Listed
)

// Accepted is what Accept found of a configuration, as far as it got.
type Accepted struct {
	// Passed is the last step passed: Listed once accepted; on an error,
	// the step before the one that failed (zero if none passed).
	Passed Step
	// Watches are the configuration's watches as the cluster serves their
	// kinds, allowed or forbidden (from Resolved on).
	Watches []config.ResolvedWatch
	// AdmissionRules are the rules with atCreation as admission policies,
	// on the resources of Watches, within the guardrails' write scope and
	// the configuration's (from Sized on).
	AdmissionRules []admission.Rule
	// Allowed are the watches the identity may list; Forbidden those it may
	// not, set aside and reported, not refused (from Listed on).
	Allowed   []config.ResolvedWatch
	Forbidden []access.Forbidden
}

// Accept decides whether the controller would run conf on the cluster cfg
// points at: it resolves conf's kinds, checks conf against guardrails (nil:
// the defaults) with the kinds' scopes as served, checks the size of the
// admission policies of its rules with atCreation, and lists one object of
// each watch (access.Check). A forbidden watch is set aside in Forbidden;
// any other failure refuses conf, with the error of the step that failed
// and what the steps before it found. The warnings are discovery's
// (apiserver.Resolve), for the caller to show.
func Accept(ctx context.Context, cfg *rest.Config, conf *config.Config, guardrails *config.Guardrails) (Accepted, []string, error) {
	var a Accepted
	watches, warnings, err := apiserver.Resolve(cfg, conf)
	if err != nil {
		return a, warnings, err
	}
	a.Passed, a.Watches = Resolved, watches
	g := guardrailsOrDefault(guardrails)
	rules := admission.Rules(conf, watches, &g.WriteScope, conf.WriteScope)
	if a.Passed, err = judge(conf, g, config.ResolvedScope(watches), rules); err != nil {
		return a, warnings, err
	}
	a.AdmissionRules = rules
	allowed, forbidden, err := access.Check(ctx, cfg, watches)
	if err != nil {
		return a, warnings, err
	}
	a.Passed, a.Allowed, a.Forbidden = Listed, allowed, forbidden
	return a, warnings, nil
}
