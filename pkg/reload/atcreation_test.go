package reload_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// atCreationConfig copies team from the Namespace and sets tier on pods of
// namespaces, at creation and after.
func atCreationConfig(namespaces ...string) string {
	return "watches:\n- kind: Namespace\n- kind: Pod\nwriteScope: {namespaces: [" + strings.Join(namespaces, ", ") + "]}\nrules:\n" +
		"- name: team\n  kinds: [Pod]\n  atCreation: true\n  setLabels: {tier: gold}\n  copyFromNamespace: {labels: [team]}\n"
}

func allowAtCreation(r *reload.Reloader) {
	limits := config.DefaultGuardrails()
	limits.AtCreation = true
	r.Settings.Guardrails = limits
}

// With atCreation, pods have the rule's keys from their first version: a
// watch opened before a Deployment is scaled to 50 (by the real
// kube-controller-manager) and before a kubectl apply of a Namespace and 50
// pods sees no version without them, and a ValidatingAdmissionPolicy that
// requires the key admits every pod. Then a change of the Namespace's label
// reaches every pod with no conflict (the key set at admission is nobody's),
// and removing the rule removes its policy and binding.
func TestAtCreationGivesTheKeysFromTheFirstVersion(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	cp.StartControllerManager(t)
	c := testkit.Client(t, cp.Config)
	const scaled, applied = "at-creation-scaled", "at-creation-applied"
	testkit.Namespace(t, c, scaled, map[string]string{"team": "red", "require-team": "true"})
	testkit.RequireLabel(t, c, "require-team", "team", &metav1.LabelSelector{MatchLabels: map[string]string{"require-team": "true"}})
	kubectlApply(t, selectors(scaled, atCreationConfig(scaled, applied)))
	startInstance(t, cp.Config, scaled+"/selectors", allowAtCreation)
	testkit.WaitAdmitted(t, c, scaled, "team", nil)

	w, err := kubernetes.NewForConfigOrDie(cp.Config).CoreV1().Pods("").Watch(t.Context(), metav1.ListOptions{LabelSelector: "app=at-creation"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	web := deployment(scaled, "web", 0)
	create(t, c, web)
	testkit.MergePatch(t, c, web, "kubectl-scale", `{"spec":{"replicas":50}}`)
	kubectlApply(t, testkit.NamespaceWithPods(applied, `team: red, require-team: "true"`, "p", "app: at-creation", 50))
	seen := map[string]bool{}
	for len(seen) < 100 {
		select {
		case ev := <-w.ResultChan():
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Bookmark || ev.Type == watch.Error {
				continue
			}
			if pod.Labels["team"] != "red" || pod.Labels["tier"] != "gold" {
				t.Errorf("a version of %s/%s without the keys: %v", pod.Namespace, pod.Name, pod.Labels)
			}
			seen[pod.Namespace+"/"+pod.Name] = true
		case <-time.After(2 * testkit.Timeout):
			t.Fatalf("saw %d of 100 pods created", len(seen))
		}
	}

	// The keys set at admission are metawatch's to change and to release:
	// one Namespace's team changes, the other's goes.
	testkit.MergePatch(t, c, namespaceObject(scaled), "kubectl-label", `{"metadata":{"labels":{"team":"blue"}}}`)
	testkit.MergePatch(t, c, namespaceObject(applied), "kubectl-label", `{"metadata":{"labels":{"team":null}}}`)
	var behind string
	defer func() {
		if t.Failed() && behind != "" {
			t.Logf("the last pods seen not following: %s", behind)
		}
	}()
	testkit.WaitFor(t, "every pod to follow its Namespace's team", 2*testkit.Timeout, func() bool {
		behind = podsNot(t, c, func(p corev1.Pod) bool {
			want := map[string]string{scaled: "blue", applied: ""}[p.Namespace]
			return p.Labels["team"] == want
		})
		return behind == ""
	})
	for _, ns := range []string{scaled, applied} {
		if conflicts := conflictEvents(t, c, ns); len(conflicts) > 0 {
			t.Errorf("%d LabelConflict Events in %s, e.g. %q: a key set at admission must be metawatch's to change", len(conflicts), ns, conflicts[0])
		}
	}

	// Another rule keeps Pods under rules: a kind with none is not reconciled at all.
	kubectlApply(t, selectors(scaled, "watches:\n- kind: Pod\nwriteScope: {namespaces: ["+scaled+", "+applied+"]}\nrules:\n- {name: other, kinds: [Pod], requireLabels: [app]}\n"))
	testkit.WaitFor(t, "the removed rule's policy and binding to be deleted", testkit.Timeout, func() bool {
		return gone(t, c, &admissionregistrationv1.MutatingAdmissionPolicy{}) && gone(t, c, &admissionregistrationv1.MutatingAdmissionPolicyBinding{})
	})
	testkit.WaitFor(t, "the removed rule's tier to be released from every pod", testkit.Timeout, func() bool {
		return everyPod(t, c, func(p corev1.Pod) bool { return p.Labels["tier"] == "" })
	})
}

// everyPod reports whether the test's 100 pods all exist and satisfy ok.
func everyPod(t *testing.T, c client.Client, ok func(corev1.Pod) bool) bool {
	return podsNot(t, c, ok) == ""
}

// podsNot says what keeps the test's 100 pods from all being ok: an error,
// another count, or up to three pods that are not, with their labels and
// the field managers of their metadata; "" when they all are.
func podsNot(t *testing.T, c client.Client, ok func(corev1.Pod) bool) string {
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.MatchingLabels{"app": "at-creation"}); err != nil {
		return err.Error()
	}
	if len(pods.Items) != 100 {
		return fmt.Sprintf("%d pods, not 100", len(pods.Items))
	}
	var not []string
	for _, p := range pods.Items {
		if !ok(p) && len(not) < 3 {
			var managers []string
			for _, m := range p.ManagedFields {
				managers = append(managers, m.Manager+"/"+string(m.Operation))
			}
			not = append(not, fmt.Sprintf("%s/%s %v (managers %v)", p.Namespace, p.Name, p.Labels, managers))
		}
	}
	return strings.Join(not, "; ")
}

func gone(t *testing.T, c client.Client, obj client.Object) bool {
	err := c.Get(t.Context(), client.ObjectKey{Name: admission.Name("team")}, obj)
	return apierrors.IsNotFound(err)
}

func conflictEvents(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	var out []string
	for _, e := range testkit.AggregateEvents(t, c, ns, rulecontroller.ReasonConflict, "") {
		out = append(out, e.Note)
	}
	return out
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "at-creation"}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}},
	}}
}

// Where the API server does not serve MutatingAdmissionPolicy, a rule with
// atCreation runs without it: the controller still sets its keys, and
// /readyz/configuration, an Event and metawatch_admission_policy_ready say so.
func TestAtCreationWithoutTheAPIRunsTheRuleAndSaysSo(t *testing.T) {
	controlplane.SkipIfShort(t)
	// A server without the API, as one before Kubernetes 1.36 (or with it
	// turned off): the resources not served, and the admission plugin off.
	off, err := controlplane.Start(t.Context(), controlplane.Options{ExtraAPIServerArgs: controlplane.WithoutMutatingAdmissionPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = off.Stop() }()
	c := testkit.Client(t, off.Config)
	const ns = "at-creation-off"
	testkit.Namespace(t, c, ns, map[string]string{"team": "red"})
	if err := testkit.KubectlApply(off.Binaries.Kubectl, off.KubeconfigPath, selectors(ns, atCreationConfig(ns))); err != nil {
		t.Fatal(err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kubernetes.NewForConfigOrDie(off.Config).EventsV1()})
	broadcaster.StartRecordingToSink(t.Context().Done())
	recorder := &countingRecorder{EventRecorder: broadcaster.NewRecorder(scheme.Scheme, rulecontroller.EventSource), reason: reload.ReasonAtCreationUnavailable}
	inst := startInstance(t, off.Config, ns+"/selectors", allowAtCreation, func(r *reload.Reloader) { r.Recorder = recorder })
	testkit.Pod(t, c, ns, "p", nil)
	testkit.WaitFor(t, "the controller to set the keys", testkit.Timeout, func() bool {
		l := podLabels(t, c, ns, "p")
		return l["team"] == "red" && l["tier"] == "gold"
	})
	testkit.WaitFor(t, "/readyz/configuration to say the rule runs without atCreation", testkit.Timeout, func() bool {
		return contains(inst.readiness(), `rule "team" runs without atCreation: the API server does not serve MutatingAdmissionPolicy`)
	})
	testkit.WaitFor(t, "the AtCreationUnavailable Event", testkit.Timeout, func() bool {
		return eventWith(t, c, ns, reload.ReasonAtCreationUnavailable, "does not serve MutatingAdmissionPolicy")
	})
	if got := testkit.Metric(t, "metawatch_admission_policy_ready", map[string]string{"rule": "team"}); got != 0 {
		t.Errorf("metawatch_admission_policy_ready{rule=team} = %v without the API, want 0", got)
	}

	// A reload meets the same reason: its Event is not repeated.
	if err := testkit.KubectlApply(off.Binaries.Kubectl, off.KubeconfigPath, selectors(ns, strings.Replace(atCreationConfig(ns), "gold", "silver", 1))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the reload", testkit.Timeout, func() bool { return podLabels(t, c, ns, "p")["tier"] == "silver" })
	time.Sleep(2 * time.Second) // the new generation's Syncer has passed
	if n := recorder.count.Load(); n != 1 {
		t.Errorf("%d AtCreationUnavailable Events for one reason across a reload, want 1", n)
	}
}

// countingRecorder counts the Events of one reason it records.
type countingRecorder struct {
	events.EventRecorder
	reason string
	count  atomic.Int64
}

func (r *countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if reason == r.reason {
		r.count.Add(1)
	}
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
