package main

import (
	"context"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/authority"
)

// pruneBeforeExit judges, once, the admission policies of this
// installation against the flags when the configuration is rejected at
// start-up (without --wait-for-config the process then exits, and no
// Pruner would ever run): a restart with --allow-at-creation=false or a
// newly protected key must not leave policies writing. A single replica
// (no leader election, not sharded) deletes those not allowed: no other
// replica writes them. Otherwise deleting needs the claim, which this
// process never holds, so it only lists them. It returns what remains to
// say ("" if nothing), for the exit message, with the kubectl line.
func pruneBeforeExit(ctx context.Context, opts options, getConfig func() (*rest.Config, error)) string {
	cfg, err := getConfig()
	if err != nil {
		return ""
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return ""
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return ""
	}
	var said string
	p := &admission.Pruner{Guardrails: &opts.settings.Guardrails, Installation: installation(opts), Client: c, Mapper: c.RESTMapper(), Discovery: dc,
		Guard: authority.Guard{}, Log: setupLog.WithName("admission-pruner"), Leftovers: &admission.Leftovers{OnChange: func(problem string) { said = problem }}}
	switch {
	case opts.settings.DryRun:
		p.Keep = "--dry-run deletes nothing"
	case opts.settings.Mode.HasLeases():
		p.Keep = "this replica exits before it may write (it never held the Lease)"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.Prune(ctx); err != nil {
		setupLog.Error(err, "judging this installation's admission policies against the flags before exiting")
	}
	return said
}
