package acceptance

import (
	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/config"
)

// Offline judges conf without a cluster, as Accept does with one: the
// guardrails with the kinds' scopes as config.OfflineScope tells them, and
// the sizes of the admission policies as admission.OfflineRules builds
// them. Nil guardrails are the defaults.
func Offline(conf *config.Config, guardrails *config.Guardrails) error {
	g := guardrailsOrDefault(guardrails)
	_, err := judge(conf, g, config.OfflineScope(conf), admission.OfflineRules(conf, &g.WriteScope, conf.WriteScope))
	return err
}

// judge runs the steps that need no cluster, given how conf's kinds
// resolve (scope) and the admission rules built from them, and returns the
// last step passed.
func judge(conf *config.Config, g *config.Guardrails, scope config.KindScope, rules []admission.Rule) (Step, error) {
	if err := g.Check(conf, scope); err != nil {
		return Resolved, err
	}
	if err := admission.CheckSizes(rules); err != nil {
		return Guarded, err
	}
	return Sized, nil
}

// guardrailsOrDefault is guardrails, or config.DefaultGuardrails for nil:
// the one place the default is filled in.
func guardrailsOrDefault(guardrails *config.Guardrails) *config.Guardrails {
	if guardrails == nil {
		d := config.DefaultGuardrails()
		return &d
	}
	return guardrails
}
