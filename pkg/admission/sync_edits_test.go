package admission_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The pod fields' CEL values are what the stored pod has: a pod created
// without restartPolicy/schedulerName, or with nodeName preset, is stored
// with the defaults and phase Pending.
func TestPodFieldsAtAdmissionAreAsStored(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "pod-fields-pos", nil)
	testkit.Namespace(t, c, "pod-fields-neg", nil)
	pos, _ := fields.ParseSelector("spec.restartPolicy=Always,spec.schedulerName=default-scheduler,status.phase=Pending")
	neg, _ := fields.ParseSelector("spec.restartPolicy!=Always")
	res := func(ns string, f fields.Selector) admission.Resource {
		r := pods
		r.Namespaces, r.Field = []string{ns}, f
		return r
	}
	install(t, c, admission.Rule{Name: "fields-pos", Resources: []admission.Resource{res("pod-fields-pos", pos)}, SetLabels: map[string]string{"tier": "gold"}})
	install(t, c, admission.Rule{Name: "fields-neg", Resources: []admission.Resource{res("pod-fields-neg", neg)}, SetLabels: map[string]string{"tier": "gold"}})
	install(t, c, admission.Rule{Name: "fields-loaded", Resources: []admission.Resource{res("pod-fields-neg", nil)}, SetLabels: map[string]string{"loaded": "yes"}})
	defer deletePair(t, c, "fields-pos")
	defer deletePair(t, c, "fields-neg")
	defer deletePair(t, c, "fields-loaded")
	testkit.WaitAdmitted(t, c, "pod-fields-pos", "tier", nil)
	testkit.WaitAdmitted(t, c, "pod-fields-neg", "loaded", nil)
	// Each policy loads on its own: fields-neg is in effect once a pod its
	// field selector matches gets tier; only then does a bare pod without
	// tier say anything.
	testkit.WaitFor(t, "the fields-neg policy to take effect", 2*testkit.Timeout, func() bool {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "pod-fields-neg", GenerateName: "probe-"},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}}
		if err := c.Create(t.Context(), probe); err != nil {
			return false
		}
		defer func() { _ = c.Delete(t.Context(), probe) }()
		return probe.Labels["tier"] == "gold"
	})

	preset := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "pod-fields-pos", Name: "preset"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}}
	if err := c.Create(t.Context(), preset); err != nil {
		t.Fatal(err)
	}
	if preset.Labels["tier"] != "gold" {
		t.Errorf("a pod with nodeName preset (stored phase %q) got %v", preset.Status.Phase, preset.Labels)
	}
	bare := testkit.Pod(t, c, "pod-fields-neg", "bare", nil)
	if _, has := bare.Labels["tier"]; has {
		t.Errorf("a pod stored with restartPolicy %q got tier from a policy whose watch is spec.restartPolicy!=Always", bare.Spec.RestartPolicy)
	}
}

// A stale pair (its rule removed) that changed between the list and the
// delete is deleted again soon, not a resync later: until then it writes
// a removed rule's keys at admission.
func TestAStalePairChangedSinceTheListGoesSoon(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	install(t, c, tierRule("stale-edited", "a"))
	defer deletePair(t, c, "stale-edited")
	r := &editingAfterList{Reader: c, c: c}
	// No resync within the wait: a pair that goes was deleted again soon
	// (retrySoonAfter), whatever the machine's speed.
	_, stop := run(t, &admission.Syncer{Client: c, Reader: r, Resync: time.Hour})
	defer stop()
	testkit.WaitFor(t, "the removed rule's policy to go", testkit.Timeout, func() bool { return policyTier(t, c, "stale-edited") == "" })
}

// editingAfterList edits the stale policy once, right after the first
// list (of policies and bindings): another writer between the Syncer's list and its delete.
type editingAfterList struct {
	client.Reader
	c    client.Client
	done atomic.Bool
}

func (e *editingAfterList) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := e.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	if _, ok := list.(*admissionregistrationv1.MutatingAdmissionPolicyBindingList); ok && e.done.CompareAndSwap(false, true) {
		p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: admission.Name("stale-edited")}}
		if err := e.c.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`))); err != nil {
			return err
		}
	}
	return nil
}

// A pair edited by hand comes back at the resync: a match condition added
// by hand is gone again.
func TestAHandEditedPolicyComesBack(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	_, stop := run(t, &admission.Syncer{Rules: []admission.Rule{tierRule("hand-edited", "a")}, Client: c, Reader: c, Resync: 200 * time.Millisecond,
		Installation: "shop/selectors"})
	defer deletePair(t, c, "hand-edited")
	defer stop()
	testkit.WaitFor(t, "the policy", testkit.Timeout, func() bool { return policyTier(t, c, "hand-edited") == "a" })
	var p admissionregistrationv1.MutatingAdmissionPolicy
	if err := c.Get(t.Context(), client.ObjectKey{Name: admission.Name("hand-edited")}, &p); err != nil {
		t.Fatal(err)
	}
	want := len(p.Spec.MatchConditions)
	p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: "by-hand", Expression: "false"})
	if err := c.Update(t.Context(), &p, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "a resync to undo the hand edit", testkit.Timeout, func() bool {
		if err := c.Get(t.Context(), client.ObjectKey{Name: admission.Name("hand-edited")}, &p); err != nil {
			t.Fatal(err)
		}
		return len(p.Spec.MatchConditions) == want
	})
}

// A changed policy the API server refuses leaves the old version without
// its binding: it would otherwise keep applying what the rule no longer
// wants. The rule says why it runs without atCreation.
func TestARefusedChangeUnbindsTheOldPolicy(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	_, stop := syncer(t, cp.Config, c, tierRule("refused", "a"))
	testkit.WaitFor(t, "the policy", testkit.Timeout, func() bool { return policyTier(t, c, "refused") == "a" })
	stop()
	defer deletePair(t, c, "refused")
	s, stop := syncer(t, cp.Config, refusingUpdates{c}, tierRule("refused", "b"))
	defer stop()
	testkit.WaitFor(t, "the old binding to go", testkit.Timeout, func() bool {
		err := c.Get(t.Context(), client.ObjectKey{Name: admission.Name("refused")}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{})
		return apierrors.IsNotFound(err)
	})
	testkit.WaitFor(t, "the problem", testkit.Timeout, func() bool {
		p := s.Problems()
		return len(p) == 1 && strings.Contains(p[0], "the API server refused it")
	})
}

// refusingUpdates refuses every policy update as invalid.
type refusingUpdates struct{ client.Client }

func (r refusingUpdates) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if _, ok := obj.(*admissionregistrationv1.MutatingAdmissionPolicy); ok {
		return apierrors.NewInvalid(schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}, obj.GetName(),
			field.ErrorList{field.Invalid(field.NewPath("spec", "mutations"), "", "refused for the test")})
	}
	return r.Client.Update(ctx, obj, opts...)
}
