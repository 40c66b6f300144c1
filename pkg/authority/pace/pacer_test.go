package pace_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority/pace"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A priority level with a seat or two that rejects what does not fit: the
// writes get 429s, the pacer lowers its rate and pauses on Retry-After,
// and every write still lands (client-go retries the 429s, and the writers
// retry what client-go gave up on, as a controller's queue does).
func TestATightPriorityLevelLowersTheRateAndEveryWriteLands(t *testing.T) {
	controlplane.SkipIfShort(t)
	admin := testkit.Client(t, cp.Config)
	const ns, user, objects = "pace-tight", "pace-test-writer", 120
	testkit.Namespace(t, admin, ns, nil)
	configMaps(t, admin, ns, objects)
	allowWrites(t, admin, ns, user)
	level := tightPriorityLevel(t, admin, user)

	limits := pace.RateBounds{Min: 1, Max: 1000, Start: 400}
	pacer := pace.New(limits, testr.New(t), nil)
	writer := pacedClient(t, pacer, user)
	// The API server picks up a new priority level within a few seconds.
	testkit.WaitFor(t, "writes served by the tight priority level", testkit.Timeout, func() bool {
		_ = label(t.Context(), writer, ns, "cm-0", "probe")
		return pacer.Served().PriorityLevelUID == string(level.UID)
	})
	throttledBefore := testkit.Metric(t, "metawatch_writes_throttled_total", nil)

	writeAll(t, writer, ns, objects, "tight", 32)

	assertLabelled(t, admin, ns, objects, "tight")
	throttled := testkit.Metric(t, "metawatch_writes_throttled_total", nil) - throttledBefore
	t.Logf("%d writes through a priority level of %s: %g answered 429; rate %g -> %g writes/s", objects, seats(level), throttled, limits.Start, pacer.Rate())
	if throttled == 0 {
		t.Fatalf("no write was answered 429: the priority level is not tight enough to test the pacer")
	}
	if pacer.Rate() >= limits.Start {
		t.Errorf("after %g 429s the rate is %g writes/s, not below its start %g", throttled, pacer.Rate(), limits.Start)
	}
	if got := testkit.Metric(t, "metawatch_write_backoffs_total", map[string]string{"reason": "throttled"}); got == 0 {
		t.Errorf("metawatch_write_backoffs_total{reason=throttled} is 0 after %g 429s", throttled)
	}
}

// With nothing in the way (the admin's requests are exempt from Priority
// and Fairness), writes waiting for the rate make it climb.
func TestAFreeServerLetsTheRateClimb(t *testing.T) {
	controlplane.SkipIfShort(t)
	admin := testkit.Client(t, cp.Config)
	const ns, objects = "pace-free", 60
	testkit.Namespace(t, admin, ns, nil)
	configMaps(t, admin, ns, objects)
	limits := pace.RateBounds{Min: 5, Max: 1000, Start: 10}
	pacer := pace.New(limits, testr.New(t), nil)
	writer, err := client.New(pacer.Config(cp.Config), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	round := 0
	testkit.WaitFor(t, "the rate to climb above its start", testkit.Timeout, func() bool {
		round++
		writeAll(t, writer, ns, objects, fmt.Sprint(round), 8)
		return pacer.Rate() > limits.Start
	})
	assertLabelled(t, admin, ns, objects, fmt.Sprint(round))
	t.Logf("rate %g -> %g writes/s after %d rounds of %d writes; served by %+v", limits.Start, pacer.Rate(), round, objects, pacer.Served())
	if pacer.Served() == (pace.ServedBy{}) {
		t.Errorf("the pacer never saw the X-Kubernetes-PF-* headers of the answers")
	}
}

// writeAll labels every ConfigMap cm-<i> of ns value=v from workers
// goroutines, each retrying its write until it lands.
func writeAll(t *testing.T, c client.Client, ns string, n int, v string, workers int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := retried(t.Context(), func(ctx context.Context) error { return label(ctx, c, ns, fmt.Sprintf("cm-%d", i), v) }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// retried calls write until it succeeds or ctx ends.
func retried(ctx context.Context, write func(context.Context) error) error {
	for {
		err := write(ctx)
		if err == nil || ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
	}
}

func label(ctx context.Context, c client.Client, ns, name, v string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"labels":{"paced":%q}}}`, v)))
}

func assertLabelled(t *testing.T, c client.Client, ns string, n int, v string) {
	t.Helper()
	var list corev1.ConfigMapList
	if err := c.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels{"paced": v}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Errorf("%d of %d ConfigMaps carry paced=%s: writes were lost", len(list.Items), n, v)
	}
}

func configMaps(t *testing.T, c client.Client, ns string, n int) {
	t.Helper()
	for i := range n {
		if err := c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// pacedClient is a client of user (impersonated by the admin) whose writes pacer paces.
func pacedClient(t *testing.T, pacer *pace.Pacer, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(pacer.Config(cfg), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func allowWrites(t *testing.T, c client.Client, ns, user string) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "writer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "patch"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "writer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "writer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// tightPriorityLevel gives user's requests a priority level of the
// smallest share, which rejects (429) what its seats cannot take at once.
func tightPriorityLevel(t *testing.T, c client.Client, user string) *flowcontrolv1.PriorityLevelConfiguration {
	t.Helper()
	level := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "pace-test-tight"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](1), LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
		}}}
	schema := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "pace-test-tight"}, Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level.Name},
		MatchingPrecedence:         500,
		Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
		}},
	}}
	for _, o := range []client.Object{level, schema} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		testkit.DeleteAtCleanup(t, c, o)
	}
	return level
}

func seats(level *flowcontrolv1.PriorityLevelConfiguration) string {
	return fmt.Sprintf("%d nominal share(s)", *level.Spec.Limited.NominalConcurrencyShares)
}
