package admission_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

var pods = admission.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespaced: true}

// The policy gives a created pod the rule's keys in its first version: a
// watch opened before 50 creates sees no version without them, a
// ValidatingAdmissionPolicy that requires the key admits them, a pod the
// rule's match leaves out gets none, and a Namespace without a copied key
// gives none and fails nothing.
func TestPolicyGivesTheKeysAtCreation(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "at-creation", map[string]string{"team": "red"})
	testkit.Namespace(t, c, "at-creation-bare", nil)
	match, _ := labels.Parse("!example.com/skip")
	install(t, c, admission.Rule{Name: "team", Resources: []admission.Resource{pods}, Match: match,
		SetLabels: map[string]string{"tier": "gold"}, SetAnnotations: map[string]string{"example.com/note": `a "quoted" value`},
		CopyLabels: []string{"team"}, Scopes: []*config.WriteScope{{Namespaces: []string{"at-creation", "at-creation-bare"}}}})
	testkit.RequireLabel(t, c, "require-team", "team", &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "at-creation"}})
	testkit.WaitAdmitted(t, c, "at-creation", "team", nil)

	cs := kubernetes.NewForConfigOrDie(cp.Config)
	w, err := cs.CoreV1().Pods("at-creation").Watch(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 50 {
		testkit.Pod(t, c, "at-creation", fmt.Sprintf("web-%d", i), map[string]string{"app": "web"}) // admitted: the required team is there
	}
	seen := 0
	for seen < 50 {
		select {
		case ev := <-w.ResultChan():
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			if pod.Labels["team"] != "red" || pod.Labels["tier"] != "gold" || pod.Annotations["example.com/note"] != `a "quoted" value` {
				t.Errorf("a version of %s without the keys: labels %v, annotations %v", pod.Name, pod.Labels, pod.Annotations)
			}
			if ev.Type == watch.Added {
				seen++
			}
		case <-time.After(testkit.Timeout):
			t.Fatalf("saw %d of 50 pods created", seen)
		}
	}
	skipped := testkit.Pod(t, c, "at-creation-bare", "skipped", map[string]string{"example.com/skip": "true"})
	if _, has := skipped.Labels["tier"]; has {
		t.Errorf("a pod the rule's match leaves out got %v", skipped.Labels)
	}
	own := testkit.Pod(t, c, "at-creation", "own-team", map[string]string{"team": "blue", "tier": "silver"})
	if own.Labels["team"] != "blue" || own.Labels["tier"] != "silver" {
		t.Errorf("a pod created with its own team and tier got %v: the policy must leave keys the creator set (the controller would not take them without force)", own.Labels)
	}
	bare := testkit.Pod(t, c, "at-creation-bare", "bare", nil)
	if _, has := bare.Labels["team"]; has || bare.Labels["tier"] != "gold" {
		t.Errorf("a pod of a Namespace without team got %v, want tier only", bare.Labels)
	}
}

// A key set at admission is owned by no field manager: metawatch's apply
// takes it without a conflict when its source changes; after a hand edit,
// the editor owns it, and metawatch's apply conflicts as with any manager.
func TestKeysSetAtCreationAreNobodysUntilEdited(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "at-creation-owners", map[string]string{"team": "red"})
	install(t, c, admission.Rule{Name: "team-owners", Resources: []admission.Resource{pods}, CopyLabels: []string{"team"}, Scopes: []*config.WriteScope{{Namespaces: []string{"at-creation-owners"}}}})
	testkit.WaitAdmitted(t, c, "at-creation-owners", "team", nil)
	pod := testkit.Pod(t, c, "at-creation-owners", "p", nil)
	for _, f := range pod.ManagedFields {
		if strings.Contains(f.FieldsV1.GetRawString(), `"f:team"`) {
			t.Errorf("%s owns the team the policy set: %s", f.Manager, f.FieldsV1.GetRawString())
		}
	}
	apply := func(value string) error {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"at-creation-owners","labels":{"team":%q}}}`, value)
		return c.Patch(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "at-creation-owners", Name: "p"}},
			client.RawPatch(types.ApplyPatchType, []byte(body)), client.FieldOwner("metawatch"))
	}
	if err := apply("blue"); err != nil {
		t.Fatalf("metawatch's apply of a key set at admission: %v, want no conflict", err)
	}
	testkit.MergePatch(t, c, pod, "kubectl-label", `{"metadata":{"labels":{"team":"green"}}}`)
	if err := apply("blue"); !apierrors.IsConflict(err) {
		t.Fatalf("metawatch's apply after a hand edit: %v, want a conflict", err)
	}
}

// The policy writes only objects the watch of their kind caches: the
// controller never sees the others, and could not release what it set.
func TestPolicyWritesOnlyWhatTheWatchCaches(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "at-creation-watched", nil)
	testkit.Namespace(t, c, "at-creation-unwatched", nil)
	watches := "watches:\n- kind: Pod\n  namespaces: [at-creation-watched, at-creation-unwatched]\n  labelSelector: app=shop\n" +
		"  fieldSelector: metadata.namespace!=at-creation-unwatched,status.phase!=Failed,spec.nodeName!=retired\n"
	conf, err := config.Parse([]byte(watches + "rules:\n- {name: watched, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rules := admission.Rules(conf, testkit.Resolve(t, cp.Config, watches))
	if len(rules) != 1 {
		t.Fatalf("rules with atCreation: %+v", rules)
	}
	install(t, c, rules[0])
	testkit.WaitAdmitted(t, c, "at-creation-watched", "tier", map[string]string{"app": "shop"})
	onRetired := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "at-creation-watched", Name: "on-retired", Labels: map[string]string{"app": "shop"}},
		Spec: corev1.PodSpec{NodeName: "retired", Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}}
	if err := c.Create(t.Context(), onRetired); err != nil {
		t.Fatal(err)
	}
	for name, pod := range map[string]*corev1.Pod{
		"a pod the label selector leaves out":           testkit.Pod(t, c, "at-creation-watched", "other-app", map[string]string{"app": "other"}),
		"a pod the field selector leaves out":           testkit.Pod(t, c, "at-creation-unwatched", "shop", map[string]string{"app": "shop"}),
		"a pod on a node the field selector leaves out": onRetired,
	} {
		if tier, has := pod.Labels["tier"]; has {
			t.Errorf("%s got tier=%s at creation: the controller never sees it, nor could release the key", name, tier)
		}
	}
}

func install(t testing.TB, c client.Client, r admission.Rule) {
	t.Helper()
	policy, binding, err := admission.Policy(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{policy, binding} { // as a Syncer of installation "" makes them
		obj.GetLabels()[admission.InstallationLabel] = admission.InstallationValue("")
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
}
