package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
)

// Pruner deletes the pairs of its installation that the operator's limits
// (flags) no longer allow: all of them once --allow-at-creation is off;
// those that write a kind, a key or a namespace the limits now forbid.
//
// It runs apart from generations, from the process's start (once this
// replica leads; sharded, on every replica, each deleting the pairs whose
// bucket it holds), because after a restart with narrower flags the
// configuration that made the pairs is rejected and no generation runs,
// while the pairs go on writing on every create. It judges each pair from
// its own spec (Judge), with no configuration. A running generation's
// Syncer makes only pairs within the same limits, so the two never undo
// each other.
//
// Where RBAC forbids listing or deleting the pairs, or Keep (--dry-run)
// forbids deleting them, it says so through Leftovers with the kubectl line that
// deletes them.
type Pruner struct {
	Guardrails *config.Guardrails
	// Installation is the configuration source that names this
	// installation's pairs (as Syncer.Installation).
	Installation string
	// Keep, when set, says why nothing is deleted, and the pairs left
	// writing are reported instead. --dry-run sets it: a dry run is for
	// looking, and one started beside a production installation, reading
	// its ConfigMap, must not delete what that one runs.
	Keep string
	// Client deletes (built with authority.Wrap, for Guard's claim) and lists.
	Client    client.Client
	Mapper    meta.RESTMapper
	Discovery discovery.DiscoveryInterface
	Guard     authority.Guard
	// NeedLeader: only the leader prunes (false when sharded).
	NeedLeader bool
	// Resync is how often the pairs are judged again (RBAC may be granted,
	// another replica may have made one); 0: a minute.
	Resync    time.Duration
	Log       logr.Logger
	Leftovers *Leftovers
}

const prunerPart = "limits"

// NeedLeaderElection is true unless sharded.
func (p *Pruner) NeedLeaderElection() bool { return p.NeedLeader }

// Start judges the pairs now and every Resync until ctx ends.
func (p *Pruner) Start(ctx context.Context) error {
	failures := 0
	for {
		next := p.resync()
		switch err := p.Prune(ctx); {
		case ctx.Err() != nil:
			return nil //nolint:nilerr // stopping: the error is the cancellation's
		case errors.Is(err, errRetrySoon):
			next = retrySoonAfter
		case err != nil:
			p.Log.Error(err, "judging this installation's admission policies against the flags; trying again")
			next = min(failedAfter<<min(failures, 8), next)
			failures++
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
}

func (p *Pruner) resync() time.Duration {
	if p.Resync <= 0 {
		return time.Minute
	}
	return p.Resync
}

// Prune is one pass: list this installation's pairs, delete those the
// limits do not allow (bindings first: a policy without one applies to
// nothing). It returns errRetrySoon, or a transient error; what RBAC or a
// dry run keeps goes to Leftovers.
func (p *Pruner) Prune(ctx context.Context) error {
	served, err := Served(p.Discovery)
	if err != nil || !served {
		return err // not served: no policy can write
	}
	existing, err := listMade(ctx, p.Client, p.Installation)
	switch {
	case apierrors.IsForbidden(err):
		p.blocked(BlockedForbidden, fmt.Sprintf("RBAC forbids listing this installation's MutatingAdmissionPolicies (%v): any left from before go on writing keys "+
			"on every create; grant list and delete on mutatingadmissionpolicies and mutatingadmissionpolicybindings, or delete them with: %s", err, DeleteCommand(p.Installation)))
		return nil
	case err != nil:
		return err
	}
	doomed := p.judge(existing)
	if len(doomed) == 0 {
		p.blocked("", "")
		return nil
	}
	if p.Keep != "" {
		p.blocked(BlockedDryRun, fmt.Sprintf("%s, and %d admission policies or bindings of this installation that the flags do not allow (%s) go on writing keys on every create; "+
			"delete them with: %s", p.Keep, len(doomed), names(doomed), DeleteCommand(p.Installation)))
		return nil
	}
	return p.deleteAll(ctx, doomed)
}

// judge returns the objects to delete, bindings first, each with why.
func (p *Pruner) judge(existing made) []doomed {
	why := map[string]error{}
	for name, policy := range existing.policies {
		if err := Judge(p.Guardrails, p.Mapper, policy); err != nil {
			why[name] = err
		}
	}
	var out []doomed
	for _, b := range existing.bindings {
		if !p.Guardrails.AtCreation {
			out = append(out, doomed{b, errors.New("--allow-at-creation is off")})
		} else if err, ok := why[b.Spec.PolicyName]; ok {
			out = append(out, doomed{b, err})
		}
	}
	for name, err := range why {
		out = append(out, doomed{existing.policies[name], err})
	}
	return out
}

type doomed struct {
	obj client.Object
	why error
}

func names(objs []doomed) string {
	out := make([]string, 0, len(objs))
	for _, d := range objs {
		out = append(out, kindOf(d.obj)+" "+d.obj.GetName())
	}
	return strings.Join(out, ", ")
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding); ok {
		return "MutatingAdmissionPolicyBinding"
	}
	return "MutatingAdmissionPolicy"
}

// deleteAll deletes the doomed objects in order; a binding whose delete
// failed keeps its policy for the next pass.
func (p *Pruner) deleteAll(ctx context.Context, objs []doomed) error {
	var forbidden []string
	var errs []error
	for _, d := range objs {
		err := deleteListed(ctx, p.Guard, p.Client, d.obj)
		switch outcome := authority.Classify(err); {
		case outcome == authority.Written:
			p.Log.Info("deleted an admission policy the flags no longer allow", "kind", kindOf(d.obj), "name", d.obj.GetName(), "why", d.why.Error())
		case outcome == authority.Gone, outcome == authority.NotSent:
		case outcome == authority.SendSoon, apierrors.IsConflict(err):
			errs = append(errs, errRetrySoon)
		case apierrors.IsForbidden(err):
			forbidden = append(forbidden, kindOf(d.obj)+" "+d.obj.GetName())
		default:
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", kindOf(d.obj), d.obj.GetName(), err))
		}
	}
	if len(forbidden) > 0 {
		p.blocked(BlockedForbidden, fmt.Sprintf("RBAC forbids deleting %s, which the flags no longer allow and which go on writing keys on every create; "+
			"grant delete on mutatingadmissionpolicies and mutatingadmissionpolicybindings, or delete them with: %s", strings.Join(forbidden, ", "), DeleteCommand(p.Installation)))
	} else {
		p.blocked("", "")
	}
	if err := errors.Join(errs...); err != nil && !errors.Is(err, errRetrySoon) {
		return err
	}
	if len(errs) > 0 {
		return errRetrySoon
	}
	return nil
}

// blocked reports why pairs to delete remain ("": none does); Leftovers
// tells of each new reason once (log, Event).
func (p *Pruner) blocked(reason, problem string) {
	if p.Leftovers != nil {
		p.Leftovers.Set(prunerPart, reason, problem)
	}
}
