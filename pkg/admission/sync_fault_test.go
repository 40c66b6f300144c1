package admission_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A list that fails once, in a generation without rules with atCreation,
// is tried again: the pair of a removed rule still goes.
func TestAFailedListDoesNotEndTheCleanup(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	install(t, c, tierRule("removed", "a"))
	_, stop := run(t, &admission.Syncer{Client: c, Reader: &failingOnce{Reader: c}, Resync: 200 * time.Millisecond})
	defer stop()
	testkit.WaitFor(t, "the removed rule's policy to go", 2*testkit.Timeout, func() bool { return policyTier(t, c, "removed") == "" })
}

type failingOnce struct {
	client.Reader
	failed atomic.Bool
}

func (f *failingOnce) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if f.failed.CompareAndSwap(false, true) {
		return errors.New("etcdserver: request timed out")
	}
	return f.Reader.List(ctx, list, opts...)
}

// A rule whose pair waits for its bucket is retried every second, alone:
// the pair of another rule, written once, is not written again.
func TestAPairWaitingForItsBucketRetriesAlone(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := &countingClient{Client: testkit.Client(t, cp.Config)}
	gate := &pendingFor{name: admission.Name("waiting")}
	_, stop := run(t, &admission.Syncer{Rules: []admission.Rule{tierRule("written", "a"), tierRule("waiting", "a")}, Client: c, Reader: c.Client,
		Guard: authority.Guard{Gate: gate}})
	testkit.WaitFor(t, "the written pair", testkit.Timeout, func() bool { return policyTier(t, c.Client, "written") == "a" })
	// Three refusals of the waiting pair: it was tried again twice after the
	// pass that wrote the other pair.
	testkit.WaitFor(t, "the waiting pair to be tried three times", testkit.Timeout, func() bool { return gate.refused.Load() >= 3 })
	stop()
	deletePair(t, c.Client, "written")
	if n := c.writes.Load(); n != 2 {
		t.Errorf("%d writes over %d tries of the waiting pair by the pair of a rule that waits for nothing, want 2 (its policy and binding, once)", n, gate.refused.Load())
	}
}

// pendingFor is a shard gate where the pair named name waits for its
// bucket, and every other is this replica's. It counts the refusals.
type pendingFor struct {
	name    string
	refused atomic.Int64
}

func (p *pendingFor) Begin(uid types.UID) (func(), bool) {
	if uid == types.UID("admission-policy/"+p.name) {
		p.refused.Add(1)
		return func() {}, false
	}
	return func() {}, true
}
func (p *pendingFor) Pending(types.UID) bool { return true }

// countingClient counts creates, updates and patches.
type countingClient struct {
	client.Client
	writes atomic.Int64
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.writes.Add(1)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.writes.Add(1)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.writes.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// deletePair deletes the pair of rule; called before the test ends.
func deletePair(t *testing.T, c client.Client, rule string) {
	meta := metav1.ObjectMeta{Name: admission.Name(rule)}
	_ = c.Delete(t.Context(), &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: meta})
	_ = c.Delete(t.Context(), &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: meta})
}

// A policy deleted (its rule removed by a newer replica) while a stalled
// replica's apply was on the wire is not made again by that apply.
func TestALateWriteDoesNotRecreateADeletedPolicy(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	_, stop := syncer(t, cp.Config, c, tierRule("deleted", "a"))
	testkit.WaitFor(t, "the policy", testkit.Timeout, func() bool { return policyTier(t, c, "deleted") == "a" })
	stop()

	held := newHoldingClient(c)
	_, stopStale := syncer(t, cp.Config, held, tierRule("deleted", "b"))
	<-held.held // listed, its apply sent and held on the way
	deletePair(t, c, "deleted")
	testkit.WaitFor(t, "the policy to go", testkit.Timeout, func() bool { return policyTier(t, c, "deleted") == "" })
	go stopStale()
	close(held.release)
	held.waitAnswered(t)
	if got := policyTier(t, c, "deleted"); got != "" {
		deletePair(t, c, "deleted")
		t.Errorf("the late write made the deleted policy again (tier %q)", got)
	}
}

// A problem that lasts until someone acts (a policy of the rule's name that
// metawatch did not make) is tried again at the resync, not every few
// seconds, and the other rules' pairs are not written again meanwhile.
func TestALastingProblemIsNotRetriedInALoop(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	raw := testkit.Client(t, cp.Config)
	foreign, _, err := admission.Policy(tierRule("not-ours", "a"))
	if err != nil {
		t.Fatal(err)
	}
	foreign.Labels = nil
	if err := raw.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	defer deletePair(t, raw, "not-ours")
	c := &countingClient{Client: raw}
	s, stop := run(t, &admission.Syncer{Rules: []admission.Rule{tierRule("not-ours", "a"), tierRule("fine", "a")}, Client: c, Reader: raw})
	testkit.WaitFor(t, "the first pass (the fine pair, the foreign name's problem)", testkit.Timeout, func() bool {
		return policyTier(t, raw, "fine") == "a" && len(s.Problems()) > 0 && c.writes.Load() >= 3
	})
	// A negative: no retry in a window of over twice the first retry of a
	// failure (failedAfter, 5 s), counted from the end of the first pass.
	// A slow machine only makes wrong retries later, never a pass fail.
	time.Sleep(12 * time.Second)
	stop()
	deletePair(t, raw, "fine")
	if n := c.writes.Load(); n != 3 {
		t.Errorf("%d writes in the 12 s after the first pass, with a resync of a minute; want 3 in all (the foreign name's once, the fine pair's once); problems: %v", n, s.Problems())
	}
}

// Two installations (each its own configuration) keep their own pairs:
// neither deletes the other's as the pair of a removed rule, and a rule
// of the same name in both is reported, not fought over.
func TestTwoInstallationsKeepTheirOwnPairs(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	_, stopA := run(t, &admission.Syncer{Rules: []admission.Rule{tierRule("team-a", "a")}, Installation: "team-a/selectors", Client: c, Reader: c,
		Resync: 100 * time.Millisecond})
	defer deletePair(t, c, "team-a")
	b, stopB := run(t, &admission.Syncer{Rules: []admission.Rule{tierRule("team-b", "b"), tierRule("team-a", "b")}, Installation: "team-b/selectors",
		Client: c, Reader: c, Resync: 100 * time.Millisecond})
	defer deletePair(t, c, "team-b")
	testkit.WaitFor(t, "both pairs", testkit.Timeout, func() bool { return policyTier(t, c, "team-a") == "a" && policyTier(t, c, "team-b") == "b" })
	for range 30 {
		time.Sleep(100 * time.Millisecond)
		if a, b := policyTier(t, c, "team-a"), policyTier(t, c, "team-b"); a != "a" || b != "b" {
			t.Fatalf("the pairs' tiers are %q and %q, want a and b: one installation changed or deleted the other's", a, b)
		}
	}
	stopA()
	stopB()
	want := `rule "team-a" runs without atCreation: MutatingAdmissionPolicy metawatch-team-a: another metawatch installation, configured by team-a/selectors, has a rule of this name`
	if got := b.Problems(); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("problems of the second installation: %q, want %q", got, want)
	}
}

// The pair of a removed rule that RBAC forbids deleting is not passed over:
// Leftovers (readiness, metric, Event) says so with the kubectl line.
func TestAStalePairRBACKeepsIsReported(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	const installation = "stale/selectors"
	_, stop := run(t, &admission.Syncer{Rules: []admission.Rule{tierRule("stale-rbac", "a")}, Installation: installation, Client: c, Reader: c, Resync: 200 * time.Millisecond})
	testkit.WaitFor(t, "the pair", testkit.Timeout, func() bool { return policyTier(t, c, "stale-rbac") == "a" })
	stop()

	forbidden := rest.CopyConfig(cp.Config)
	forbidden.Impersonate = rest.ImpersonationConfig{UserName: "nobody-in-particular"}
	leftovers := &admission.Leftovers{}
	_, stop = run(t, &admission.Syncer{Installation: installation, Client: testkit.Client(t, forbidden), Reader: c, Resync: 200 * time.Millisecond, Leftovers: leftovers})
	defer stop()
	testkit.WaitFor(t, "the leftover to be reported", testkit.Timeout, func() bool {
		err := leftovers.Ready()
		return err != nil && strings.Contains(err.Error(), "RBAC forbids deleting the admission policies of removed rules") &&
			strings.Contains(err.Error(), admission.DeleteCommand(installation))
	})
	if policyTier(t, c, "stale-rbac") != "a" {
		t.Error("the pair went, though RBAC forbids its delete")
	}
	if got := testkit.Metric(t, "metawatch_admission_cleanup_blocked", map[string]string{"reason": "forbidden"}); got != 1 {
		t.Errorf("metawatch_admission_cleanup_blocked{reason=forbidden} = %v, want 1", got)
	}
}
