package rulecontroller_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Chains made by hand, as the workload controllers make them (they do not
// run beside this control plane): Deployment → ReplicaSet → pods and
// CronJob → Job → pods, each reference with controller: true.
const ownersConfig = `watches:
- kind: Pod
  namespaces: [owners]
rules:
- name: cost-from-workload
  kinds: [Pod]
  copyFromOwner: {kinds: [Deployment, CronJob], labels: [cost-center], annotations: [example.com/owner]}
`

// copyFromOwner: pods follow their Deployment's (through its ReplicaSet) and
// their CronJob's (through its Job) keys as they are set, changed and
// removed, without being replaced; a pod whose ReplicaSet is not there yet
// waits for it (the initial lists of pods and owners come in no set order);
// an orphaned pod releases the keys.
func TestCopyFromOwnerFollowsTheChain(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "owners"
	testkit.Namespace(t, c, ns, nil)
	web := create(t, c, deployment(ns, "web", map[string]string{"cost-center": "7"}, map[string]string{"example.com/owner": "alice"}))
	webRS := create(t, c, replicaSet(ns, "web-1", web))
	nightly := create(t, c, cronJob(ns, "nightly", map[string]string{"cost-center": "9"}))
	nightlyJob := create(t, c, job(ns, "nightly-1", nightly))
	uids := map[string]string{}
	for i := range 20 {
		uids[fmt.Sprintf("web-%d", i)] = string(ownedPod(t, c, ns, fmt.Sprintf("web-%d", i), webRS).UID)
	}
	for i := range 5 {
		uids[fmt.Sprintf("nightly-%d", i)] = string(ownedPod(t, c, ns, fmt.Sprintf("nightly-%d", i), nightlyJob).UID)
	}

	startInstance(t, ownersConfig, tuned(func(s *settings.Settings) { s.MaxConcurrentReconciles = 4 }))
	costIs := func(web, nightly string) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			want := web
			if p.OwnerReferences[0].Kind == "Job" {
				want = nightly
			}
			return p.Labels["cost-center"] == want
		}
	}
	waitPods(t, c, ns, "every pod to get its workload's cost-center", costIs("7", "9"))
	if got := getPod(t, c, ns, "web-0").Annotations["example.com/owner"]; got != "alice" {
		t.Errorf("web-0's example.com/owner is %q, want the Deployment's alice", got)
	}

	testkit.MergePatch(t, c, web, "kubectl-label", `{"metadata":{"labels":{"cost-center":"8"}}}`)
	testkit.MergePatch(t, c, nightly, "kubectl-label", `{"metadata":{"labels":{"cost-center":"10"}}}`)
	waitPods(t, c, ns, "every pod to follow its workload's new cost-center", costIs("8", "10"))

	testkit.MergePatch(t, c, web, "kubectl-label", `{"metadata":{"labels":{"cost-center":null}}}`)
	waitPods(t, c, ns, "the cost-center to leave the Deployment's pods only", costIs("", "10"))

	// A rollout: a new ReplicaSet and its pod, made at once, get the keys.
	testkit.MergePatch(t, c, web, "kubectl-label", `{"metadata":{"labels":{"cost-center":"11"}}}`)
	ownedPod(t, c, ns, "web-rollout", create(t, c, replicaSet(ns, "web-2", web)))
	waitPods(t, c, ns, "the new ReplicaSet's pod to get the cost-center too", costIs("11", "10"))

	// Orphaned (its owner deleted with propagation orphan: the garbage
	// collector drops the reference), a pod has no owner to copy from: it
	// releases what it copied; the pods still owned follow on.
	testkit.MergePatch(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}, "kube-controller-manager", `{"metadata":{"ownerReferences":null}}`)
	testkit.MergePatch(t, c, web, "kubectl-label", `{"metadata":{"labels":{"cost-center":"12"}}}`)
	waitPods(t, c, ns, "the owned pods to follow the Deployment", costIs("12", "10"))
	testkit.WaitFor(t, "the orphaned pod to release the cost-center", testkit.Timeout, func() bool {
		_, has := getPod(t, c, ns, "web-0").Labels["cost-center"]
		return !has
	})
	// A Job whose CronJob is gone: the chain ends at the Job, its pods release theirs.
	testkit.MergePatch(t, c, nightlyJob, "kube-controller-manager", `{"metadata":{"ownerReferences":null}}`)
	testkit.WaitFor(t, "the orphaned Job's pods to release the cost-center", testkit.Timeout, func() bool {
		_, has := getPod(t, c, ns, "nightly-0").Labels["cost-center"]
		return !has
	})
	for name, uid := range uids {
		if name == "web-0" {
			continue
		}
		if got := string(getPod(t, c, ns, name).UID); got != uid {
			t.Errorf("pod %s was replaced (uid %s, was %s): labels reach pods in place", name, got, uid)
		}
	}
}

func waitPods(t *testing.T, c client.Client, ns, what string, ok func(*corev1.Pod) bool) {
	t.Helper()
	testkit.WaitFor(t, what, testkit.Timeout, func() bool {
		var pods corev1.PodList
		if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range pods.Items {
			if len(pods.Items[i].OwnerReferences) > 0 && !ok(&pods.Items[i]) {
				return false
			}
		}
		return true
	})
}

func create[T client.Object](t *testing.T, c client.Client, obj T) T {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// controlledBy is the reference a workload controller puts on what it makes.
func controlledBy(owner client.Object, kind string) []metav1.OwnerReference {
	gvk := map[string]string{"ReplicaSet": "apps/v1", "Deployment": "apps/v1", "Job": "batch/v1", "CronJob": "batch/v1"}[kind]
	return []metav1.OwnerReference{{APIVersion: gvk, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}

var webTemplate = corev1.PodTemplateSpec{
	ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
	Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}},
}

func deployment(ns, name string, labels, annotations map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: webTemplate}}
}

func replicaSet(ns, name string, owner *appsv1.Deployment) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: controlledBy(owner, "Deployment")},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: webTemplate}}
}

func cronJob(ns, name string, labels map[string]string) *batchv1.CronJob {
	return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec()}}}
}

func job(ns, name string, owner *batchv1.CronJob) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: controlledBy(owner, "CronJob")}, Spec: jobSpec()}
}

func jobSpec() batchv1.JobSpec {
	return batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}}}
}

func ownedPod(t *testing.T, c client.Client, ns, name string, owner client.Object) *corev1.Pod {
	t.Helper()
	kind := "ReplicaSet"
	if _, ok := owner.(*batchv1.Job); ok {
		kind = "Job"
	}
	return create(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: controlledBy(owner, kind)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}})
}

// The chains the cluster's controllers make (kube-controller-manager runs
// beside the control plane): a Deployment's pods through its ReplicaSet, a
// rollout's new ReplicaSet, a StatefulSet's pods, a CronJob's Job's pods.
// Every pod follows its workload's labels in place (the same uid), and an
// orphaning Deployment deletion leaves its pods with no owner to copy from:
// they release the keys.
func TestCopyFromOwnerOnTheControllersChains(t *testing.T) {
	controlplane.SkipIfShort(t)
	cp.StartControllerManager(t)
	c := testkit.Client(t, cp.Config)
	const ns = "owners-kcm"
	testkit.Namespace(t, c, ns, nil)
	web := deployment(ns, "web", map[string]string{"cost-center": "7"}, nil)
	web.Spec.Replicas = ptr.To[int32](30)
	create(t, c, web)
	db := create(t, c, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Labels: map[string]string{"cost-center": "8"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement, // no kubelet: none would be Ready
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}, Spec: webTemplate.Spec}}})
	nightly := create(t, c, cronJob(ns, "nightly", map[string]string{"cost-center": "9"}))
	nightlyJob := job(ns, "nightly-1", nightly) // the CronJob's Job, as its controller makes it at the scheduled time
	nightlyJob.Spec.Parallelism = ptr.To[int32](2)
	create(t, c, nightlyJob)
	podsOf := func(prefix string) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool { return len(p.Name) > len(prefix) && p.Name[:len(prefix)] == prefix }
	}
	testkit.WaitFor(t, "the controllers to make 30 + 3 + 2 pods", testkit.Timeout, func() bool {
		return len(listPods(t, c, podsOf("web-"))) == 30 && len(listPods(t, c, podsOf("db-"))) == 3 && len(listPods(t, c, podsOf("nightly-"))) == 2
	})

	startInstance(t, "watches:\n- kind: Pod\n  namespaces: ["+ns+"]\nrules:\n- name: cost\n  kinds: [Pod]\n  copyFromOwner: {kinds: [Deployment, StatefulSet, CronJob], labels: [cost-center]}\n",
		tuned(func(s *settings.Settings) { s.MaxConcurrentReconciles = 4 }))
	want := map[string]string{"web-": "7", "db-": "8", "nightly-": "9"}
	costs := func(p *corev1.Pod) bool {
		for prefix, v := range want {
			if podsOf(prefix)(p) {
				return p.Labels["cost-center"] == v
			}
		}
		return true
	}
	waitPods(t, c, ns, "every pod to get its workload's cost-center", costs)
	uids := map[string]string{}
	for _, p := range listPods(t, c, func(*corev1.Pod) bool { return true }) {
		uids[p.Name] = string(p.UID)
	}

	changed := time.Now()
	testkit.MergePatch(t, c, web, "kubectl-label", `{"metadata":{"labels":{"cost-center":"17"}}}`)
	want["web-"] = "17"
	waitPods(t, c, ns, "the Deployment's 30 pods to follow its new cost-center", costs)
	t.Logf("a Deployment's label change reached the last of its 30 pods in %s", time.Since(changed).Round(time.Millisecond))
	testkit.MergePatch(t, c, db, "kubectl-label", `{"metadata":{"labels":{"cost-center":"18"}}}`)
	testkit.MergePatch(t, c, nightly, "kubectl-label", `{"metadata":{"labels":{"cost-center":"19"}}}`)
	want["db-"], want["nightly-"] = "18", "19"
	waitPods(t, c, ns, "the StatefulSet's and the CronJob's pods to follow", costs)
	for _, p := range listPods(t, c, func(*corev1.Pod) bool { return true }) {
		if uid, ok := uids[p.Name]; ok && uid != string(p.UID) {
			t.Errorf("pod %s was replaced: labels reach pods in place", p.Name)
		}
	}

	// A rollout: the new ReplicaSet's pods get the Deployment's keys too.
	testkit.MergePatch(t, c, web, "kubectl-rollout", `{"spec":{"template":{"metadata":{"annotations":{"restartedAt":"now"}}}}}`)
	testkit.WaitFor(t, "the rollout's first new pods", testkit.Timeout, func() bool { return len(listPods(t, c, podsOf("web-"))) > 30 })
	waitPods(t, c, ns, "the rollout's pods to get the cost-center", costs)

	// Deleted with propagation orphan: the garbage collector takes the
	// ReplicaSets' references away; their pods release the keys.
	if err := c.Delete(t.Context(), web, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the garbage collector to orphan the ReplicaSets", testkit.Timeout, func() bool {
		var sets appsv1.ReplicaSetList
		if err := c.List(t.Context(), &sets, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, rs := range sets.Items {
			if len(rs.OwnerReferences) > 0 {
				return false
			}
		}
		return len(sets.Items) > 0
	})
	testkit.WaitFor(t, "the orphaned ReplicaSets' pods to release the cost-center", testkit.Timeout, func() bool {
		for _, p := range listPods(t, c, podsOf("web-")) {
			if _, has := p.Labels["cost-center"]; has {
				return false
			}
		}
		return true
	})
}

// listPods lists the pods of TestCopyFromOwnerOnTheControllersChains's namespace that keep says.
func listPods(t *testing.T, c client.Client, keep func(*corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace("owners-kcm")); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for i := range pods.Items {
		if keep(&pods.Items[i]) {
			out = append(out, pods.Items[i])
		}
	}
	return out
}
