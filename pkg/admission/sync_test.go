package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

func tierRule(name, tier string) admission.Rule {
	return admission.Rule{Name: name, Resources: []admission.Resource{pods}, SetLabels: map[string]string{"tier": tier}}
}

// syncer runs a Syncer of rules, through c, until the returned stop.
func syncer(t *testing.T, cfg *rest.Config, c client.Client, rules ...admission.Rule) (*admission.Syncer, func()) {
	t.Helper()
	return run(t, &admission.Syncer{Rules: rules, Client: c, Reader: testkit.Client(t, cfg), Resync: 200 * time.Millisecond})
}

// run starts s, with an open gate and discovery of the test control plane,
// until the returned stop.
func run(t *testing.T, s *admission.Syncer) (*admission.Syncer, func()) {
	t.Helper()
	open := make(chan struct{})
	close(open)
	s.Gate, s.Discovery = open, discovery.NewDiscoveryClientForConfigOrDie(cp.Config)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Start(ctx) }()
	return s, func() { cancel(); <-done }
}

func policyTier(t *testing.T, c client.Client, rule string) string {
	var p admissionregistrationv1.MutatingAdmissionPolicy
	if err := c.Get(t.Context(), client.ObjectKey{Name: admission.Name(rule)}, &p); err != nil {
		return ""
	}
	for _, m := range p.Spec.Mutations {
		for _, tier := range []string{"a", "b"} {
			if strings.Contains(m.ApplyConfiguration.Expression, `{"tier": "`+tier+`"}`) {
				return tier
			}
		}
	}
	return "?"
}

// A replica that listed the policy, then stalled with its write on the
// wire while another wrote a newer version, is refused when its write
// arrives: the policy stays the newer one.
func TestALateWriteDoesNotUndoANewerPolicy(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	_, stop := syncer(t, cp.Config, c, tierRule("stale", "a"))
	testkit.WaitFor(t, "the policy", testkit.Timeout, func() bool { return policyTier(t, c, "stale") == "a" })
	stop()

	held := newHoldingClient(c)
	_, stopStale := syncer(t, cp.Config, held, tierRule("stale", "a"))
	<-held.held // listed, its apply sent and held on the way
	_, stopNewer := syncer(t, cp.Config, c, tierRule("stale", "b"))
	testkit.WaitFor(t, "the newer policy", testkit.Timeout, func() bool { return policyTier(t, c, "stale") == "b" })
	stopNewer()
	go stopStale()
	close(held.release)
	held.waitAnswered(t)
	if got := policyTier(t, c, "stale"); got != "b" {
		t.Errorf("the policy's tier is %q after the late write, want b (the newer)", got)
	}
}

// holdingClient holds the first Update until release, as a network would:
// the write is on the wire, and arrives even if its replica stops meanwhile.
type holdingClient struct {
	client.Client
	held, release chan struct{}
	answered      chan error // the held write's answer
	once          bool
}

func newHoldingClient(c client.Client) *holdingClient {
	return &holdingClient{Client: c, held: make(chan struct{}), release: make(chan struct{}), answered: make(chan error, 1)}
}

func (h *holdingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if !h.once {
		h.once = true
		close(h.held)
		<-h.release
		err := h.Client.Update(context.WithoutCancel(ctx), obj, opts...)
		h.answered <- err
		return err
	}
	return h.Client.Update(ctx, obj, opts...)
}

// waitAnswered waits until the API server has answered the held write.
func (h *holdingClient) waitAnswered(t *testing.T) {
	t.Helper()
	select {
	case err := <-h.answered:
		t.Logf("the held write arrived: %v", err)
	case <-time.After(testkit.Timeout):
		t.Fatalf("the held write was not answered in %s", testkit.Timeout)
	}
}

// A policy of the rule's name that metawatch did not make is left alone,
// and the rule says why it runs without atCreation; so does one whose
// identity may not write policies.
func TestAPolicyMetawatchCannotWriteIsReported(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	foreign := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: admission.Name("foreign")},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"mine": "yes"}}}`}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		}}
	if err := c.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	s, stop := syncer(t, cp.Config, c, tierRule("foreign", "a"))
	testkit.WaitFor(t, "the problem", testkit.Timeout, func() bool {
		return strings.Contains(strings.Join(s.Problems(), "\n"), `rule "foreign" runs without atCreation: MutatingAdmissionPolicy metawatch-foreign: one of this name exists that metawatch did not make`)
	})
	stop()
	if got := policyTier(t, c, "foreign"); got != "?" {
		t.Errorf("metawatch changed a policy it did not make: tier %q", got)
	}

	forbidden := rest.CopyConfig(cp.Config)
	forbidden.Impersonate = rest.ImpersonationConfig{UserName: "nobody-in-particular"}
	s, stop = syncer(t, forbidden, testkit.Client(t, forbidden), tierRule("forbidden", "a"))
	defer stop()
	testkit.WaitFor(t, "the problem", testkit.Timeout, func() bool {
		return strings.Contains(strings.Join(s.Problems(), "\n"), `rule "forbidden" runs without atCreation: RBAC forbids listing the admission policies`)
	})
}
