package admission

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Syncer keeps the cluster's admission policies and bindings equal to
// Rules: it creates or updates one pair per rule, and deletes the pairs of
// its installation whose rule is gone. It runs in a generation, as a
// Runnable of its Manager: it writes only once Gate closes, through Guard,
// like the generation's controllers, so that one replica at a time writes a
// pair, and not after its claim has lapsed.
//
// Where the API server does not serve MutatingAdmissionPolicy, or RBAC
// forbids it, the rules run without atCreation: the controller alone keeps
// their keys, a moment after creation. Problems says so (readiness), as do
// metawatch_admission_policy_ready and OnProblem (an Event).
type Syncer struct {
	Rules []Rule
	// Installation names the configuration the rules come from (the
	// ConfigMap's namespace/name): the pairs of another installation of
	// metawatch are not this one's to update or delete.
	Installation string
	// Client writes (built with authority.Wrap, for Guard's claim), as
	// Guard's identity (the installation's field manager); Reader
	// lists, uncached; Discovery tells whether the API is served.
	Client    client.Client
	Reader    client.Reader
	Discovery discovery.DiscoveryInterface
	Guard     authority.Guard
	// Gate holds every write until it is closed (the generation opens).
	Gate <-chan struct{}
	// Resync is how often the pairs are checked again (a pair deleted or
	// edited by hand comes back, the API server may start serving the
	// API); 0: a minute.
	Resync time.Duration
	Log    logr.Logger
	// OnProblem, when set, is told each change of the reason a rule's pair
	// is not in place ("" once it is).
	OnProblem func(rule, problem string)
	// Owner, when set, is the ClusterRole the pairs are owned by
	// (ownerReferences): deleting it deletes them (helm uninstall).
	Owner string
	// Leftovers, when set, is told while RBAC keeps the pairs of removed
	// rules from being deleted.
	Leftovers *Leftovers

	mu       sync.Mutex
	problems map[string]string // rule → why its pair is not in place
	// written is the resourceVersion of each object as this Syncer last
	// wrote it: one still at it is not written again.
	written map[string]string
	// failures counts the passes in a row that met a transient error.
	failures int
}

// The guard's key of a rule's pair: sharded, the replica holding its bucket
// writes it.
func guardKey(name string) types.UID { return types.UID("admission-policy/" + name) }

// errRetrySoon: a write was not sent for now (a claim lapsed, a bucket
// coming, another wrote since the list); the pass is repeated shortly.
var errRetrySoon = errors.New("retry soon")

// lastingError is a write that fails the same way until someone acts (a
// policy of the name that is not metawatch's, RBAC, a refused policy): it
// is tried again at the next resync, not in a loop.
type lastingError struct{ error }

func (e lastingError) Unwrap() error { return e.error }

func lasting(err error) error { return lastingError{err} }

func isLasting(err error) bool { return errors.As(err, new(lastingError)) }

const (
	retrySoonAfter = time.Second
	failedAfter    = 5 * time.Second
)

// NeedLeaderElection is false: the generation runs only where it may write.
func (s *Syncer) NeedLeaderElection() bool { return false }

// Start syncs once the gate opens, then every Resync, until ctx ends.
func (s *Syncer) Start(ctx context.Context) error {
	select {
	case <-s.Gate:
	case <-ctx.Done():
		return nil
	}
	for {
		next := s.sync(ctx)
		if next == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
}

// sync is one pass; it returns when to pass again, 0 for never (no rule
// has atCreation, and nothing of this installation's is left to delete).
func (s *Syncer) sync(ctx context.Context) time.Duration {
	served, err := Served(s.Discovery)
	switch {
	case err != nil:
		s.failAll(fmt.Sprintf("cannot tell whether the API server serves MutatingAdmissionPolicy: %v", err))
		return s.failed()
	case !served && len(s.Rules) == 0:
		return 0
	case !served:
		s.failAll("the API server does not serve MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.36 and later); " +
			"the controller sets the rule's keys a moment after each object is created")
		return s.resync()
	}
	existing, err := s.list(ctx)
	switch {
	case ctx.Err() != nil:
		return 0 // the generation stops: not a problem of the rules
	case len(s.Rules) == 0 && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err)):
		// Nothing to make. Whether pairs are left to delete is not known:
		// the Pruner, which lists them whatever runs, says so loudly.
		return 0
	case apierrors.IsForbidden(err):
		s.failAll(fmt.Sprintf("RBAC forbids listing the admission policies (%v): %s", err, grantHint))
		return s.resync()
	case err != nil && len(s.Rules) == 0:
		s.Log.Info("cannot list the admission policies to delete those of removed rules; trying again", "error", err.Error())
		return s.failed()
	case err != nil:
		s.failAll(fmt.Sprintf("listing the admission policies: %v", err))
		return s.failed()
	}
	return s.putAll(ctx, existing)
}

// putAll puts every rule's pair and deletes the stale ones.
func (s *Syncer) putAll(ctx context.Context, existing made) time.Duration {
	next, transient := s.resync(), false
	owners, ownerErr := s.ownerReferences(ctx)
	for _, r := range s.Rules {
		err := ownerErr
		if err == nil {
			err = s.put(ctx, r, existing, owners)
		}
		if ctx.Err() != nil {
			return 0
		}
		switch {
		case errors.Is(err, errRetrySoon):
			next = min(next, retrySoonAfter)
		case err != nil && !isLasting(err):
			transient = true
		}
		s.report(r.Name, err)
	}
	err := s.removeStale(ctx, existing)
	s.reportStale(err)
	switch {
	case errors.Is(err, errRetrySoon):
		next = min(next, retrySoonAfter)
	case err != nil:
		s.Log.Error(err, "deleting the admission policies of removed rules")
		transient = true
	}
	if transient {
		return min(next, s.failed())
	}
	s.failures = 0
	return next
}

// reportStale tells Leftovers whether RBAC keeps the pairs of removed rules.
func (s *Syncer) reportStale(err error) {
	if s.Leftovers == nil {
		return
	}
	if apierrors.IsForbidden(err) {
		s.Leftovers.Set("configuration", BlockedForbidden, fmt.Sprintf("RBAC forbids deleting the admission policies of removed rules (%v), which go on writing keys on every create; "+
			"grant delete on mutatingadmissionpolicies and mutatingadmissionpolicybindings, or delete them with: %s", err, DeleteCommand(s.Installation)))
		return
	}
	s.Leftovers.Set("configuration", "", "")
}

// failed counts a pass with a transient error and returns when to try
// again: 5 s, doubling to the resync period.
func (s *Syncer) failed() time.Duration {
	after := failedAfter << min(s.failures, 8)
	s.failures++
	return min(after, s.resync())
}

// Served reports whether the API server serves MutatingAdmissionPolicy.
func Served(dc discovery.DiscoveryInterface) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == Resources[0] {
			return true, nil
		}
	}
	return false, nil
}

// report records the outcome of putting a rule's pair.
func (s *Syncer) report(rule string, err error) {
	switch {
	case err == nil:
		s.setProblem(rule, "", 1)
	case errors.Is(err, errRetrySoon):
	case authority.Classify(err) == authority.NotSent: // another replica writes it, or the generation stops
		s.setProblem(rule, "", -1)
	default:
		s.setProblem(rule, err.Error(), 0)
	}
}

func (s *Syncer) resync() time.Duration {
	if s.Resync <= 0 {
		return time.Minute
	}
	return s.Resync
}

// failAll reports problem for every rule this replica would write.
func (s *Syncer) failAll(problem string) {
	for _, r := range s.Rules {
		if s.Guard.LeavesToAnother(guardKey(Name(r.Name))) {
			s.setProblem(r.Name, "", -1)
			continue
		}
		s.setProblem(r.Name, problem, 0)
	}
}

// setProblem records why rule's pair is not in place ("" if it is) and
// sets its metric to ready (-1: this replica does not write it).
func (s *Syncer) setProblem(rule, problem string, ready float64) {
	if ready < 0 {
		telemetry.AdmissionPolicyReady.DeleteLabelValues(rule)
	} else {
		telemetry.AdmissionPolicyReady.WithLabelValues(rule).Set(ready)
	}
	s.mu.Lock()
	if s.problems == nil {
		s.problems = map[string]string{}
	}
	previous, known := s.problems[rule]
	s.problems[rule] = problem
	s.mu.Unlock()
	if known && previous == problem || !known && problem == "" {
		return
	}
	if problem != "" {
		s.Log.Error(errors.New(problem), "the rule runs without atCreation", "rule", rule)
	}
	if s.OnProblem != nil {
		s.OnProblem(rule, problem)
	}
}

// Problems lists, one line per rule, why its admission policy is not in place.
func (s *Syncer) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for rule, p := range s.problems {
		if p != "" {
			out = append(out, fmt.Sprintf("rule %q runs without atCreation: %s", rule, p))
		}
	}
	sort.Strings(out)
	return out
}
