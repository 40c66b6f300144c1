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
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/controller"
	"github.com/metawatch/metawatch/pkg/metrics"
)

// Syncer keeps the cluster's admission policies and bindings equal to
// Rules: it creates or updates one pair per rule, and deletes the pairs it
// made (app.kubernetes.io/managed-by=metawatch) whose rule is gone. It runs
// in a generation, as a Runnable of its Manager: it writes only once Gate
// closes, through Guard, like the generation's controllers, so that one
// replica at a time writes a pair, and not after its claim has lapsed.
//
// Where the API server does not serve MutatingAdmissionPolicy, or RBAC
// forbids it, the rules run without atCreation: the controller alone keeps
// their keys, a moment after creation. Problems says so (readiness), as do
// metawatch_admission_policy_ready and OnProblem (an Event).
type Syncer struct {
	Rules []Rule
	// Client writes (built with fence.Wrap, for Guard's claim); Reader
	// lists, uncached; Discovery tells whether the API is served.
	Client    client.Client
	Reader    client.Reader
	Discovery discovery.DiscoveryInterface
	Guard     controller.Guard
	// Gate holds every write until it is closed (the generation opens).
	Gate <-chan struct{}
	// Resync is how often the pairs are checked again (a pair deleted by
	// hand comes back, the API server may start serving the API); 0: a minute.
	Resync time.Duration
	Log    logr.Logger
	// OnProblem, when set, is told each new reason a rule's pair is not in place.
	OnProblem func(rule, problem string)

	mu       sync.Mutex
	problems map[string]string // rule → why its pair is not in place
}

// The guard's key of a rule's pair: sharded, the replica holding its bucket
// writes it.
func guardKey(name string) string { return "admission-policy/" + name }

// errRetrySoon: a write was not sent for now (a claim lapsed, a bucket
// coming); the pass is repeated shortly.
var errRetrySoon = errors.New("retry soon")

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
// has atCreation, and nothing of metawatch's is left to delete).
func (s *Syncer) sync(ctx context.Context) time.Duration {
	resync := s.resync()
	served, err := Served(s.Discovery)
	switch {
	case err != nil:
		s.failAll(fmt.Sprintf("cannot tell whether the API server serves MutatingAdmissionPolicy: %v", err))
		return failedAfter
	case !served && len(s.Rules) == 0:
		return 0
	case !served:
		s.failAll("the API server does not serve MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.36 and later): " +
			"the rule runs without atCreation, and the controller sets its keys a moment after each object is created")
		return resync
	}
	existing, err := s.list(ctx)
	switch {
	case ctx.Err() != nil:
		return 0 // the generation stops: not a problem of the rules
	case err != nil && len(s.Rules) == 0:
		s.Log.V(1).Info("cannot list admission policies to delete those of removed rules", "error", err.Error())
		return 0 // without the permission, none was made by this identity
	case apierrors.IsForbidden(err):
		s.failAll(fmt.Sprintf("RBAC forbids metawatch the admission policies, so the rule runs without atCreation: %v; "+
			"grant get, list, create, patch and delete on mutatingadmissionpolicies and mutatingadmissionpolicybindings (chart: atCreation.enabled: true)", err))
		return resync
	case err != nil:
		s.failAll(fmt.Sprintf("listing admission policies: %v", err))
		return failedAfter
	}
	next := resync
	for _, r := range s.Rules {
		err := s.put(ctx, r, existing)
		if ctx.Err() != nil {
			return 0
		}
		next = min(next, s.report(r.Name, err))
	}
	if err := s.removeStale(ctx, existing); err != nil {
		s.Log.Error(err, "deleting the admission policies of removed rules")
		next = min(next, failedAfter)
	}
	return next
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

// report records the outcome of putting a rule's pair and returns when to
// pass again.
func (s *Syncer) report(rule string, err error) time.Duration {
	switch {
	case err == nil:
		s.setProblem(rule, "", 1)
	case errors.Is(err, errRetrySoon):
		return retrySoonAfter
	case controller.NotWritten(err): // another replica writes it, or the generation stops
		s.setProblem(rule, "", -1)
	default:
		s.setProblem(rule, err.Error(), 0)
		return failedAfter
	}
	return s.resync()
}

func (s *Syncer) resync() time.Duration {
	if s.Resync <= 0 {
		return time.Minute
	}
	return s.Resync
}

func (s *Syncer) failAll(problem string) {
	for _, r := range s.Rules {
		s.setProblem(r.Name, problem, 0)
	}
}

// setProblem records why rule's pair is not in place ("" if it is) and
// sets its metric to ready (-1: this replica does not write it).
func (s *Syncer) setProblem(rule, problem string, ready float64) {
	if ready < 0 {
		metrics.AdmissionPolicyReady.DeleteLabelValues(rule)
	} else {
		metrics.AdmissionPolicyReady.WithLabelValues(rule).Set(ready)
	}
	s.mu.Lock()
	if s.problems == nil {
		s.problems = map[string]string{}
	}
	changed := problem != "" && s.problems[rule] != problem
	s.problems[rule] = problem
	s.mu.Unlock()
	if changed {
		s.Log.Error(errors.New(problem), "the rule runs without atCreation", "rule", rule)
		if s.OnProblem != nil {
			s.OnProblem(rule, problem)
		}
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
