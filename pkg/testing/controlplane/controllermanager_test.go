package controlplane_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The controller manager beside the test control plane makes what a cluster's
// does, with the same controller ownerReferences: a Deployment's ReplicaSet
// and its pods, a Job's pod; and its garbage collector deletes them with their owner.
func TestControllerManagerMakesOwnedObjects(t *testing.T) {
	controlplane.SkipIfShort(t)
	cp.StartControllerManager(t)
	c := testkit.Client(t, cp.Config)
	// A namespace of each run's own: -count=N runs on the same control plane,
	// where no namespace controller ever finishes deleting one.
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "controller-manager-"}}
	if err := c.Create(t.Context(), namespace); err != nil {
		t.Fatal(err)
	}
	ns := namespace.Name

	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate(map[string]string{"app": "web"}, corev1.RestartPolicyAlways),
		},
	}
	// The Job's selector and pod labels are the Job controller's to set.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "once"},
		Spec:       batchv1.JobSpec{Template: podTemplate(nil, corev1.RestartPolicyNever)},
	}
	for _, obj := range []client.Object{deploy, job} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}

	// What was missing at the last look, said if the wait times out.
	var missing string
	defer func() {
		if t.Failed() && missing != "" {
			t.Logf("at the last look: %s", missing)
		}
	}()
	testkit.WaitFor(t, "a ReplicaSet of the Deployment with 3 pods, and a pod of the Job", testkit.Timeout, func() bool {
		missing = ownedObjects(t, c, ns, deploy.UID, job.UID)
		return missing == ""
	})

	if err := c.Delete(t.Context(), deploy); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the garbage collector to delete the Deployment's ReplicaSet and pods", testkit.Timeout, func() bool {
		var rss appsv1.ReplicaSetList
		var pods corev1.PodList
		listIn(t, c, ns, &rss)
		listIn(t, c, ns, &pods)
		missing = fmt.Sprintf("%d ReplicaSets (want 0), %d pods (want 1, the Job's)", len(rss.Items), len(pods.Items))
		return len(rss.Items) == 0 && len(pods.Items) == 1
	})
	missing = ""
}

func podTemplate(labels map[string]string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy: restart,
			Containers:    []corev1.Container{{Name: "app", Image: testkit.PodImage}},
		},
	}
}

// ownedObjects says what is missing of Pod → ReplicaSet → Deployment (3 pods)
// and Pod → Job, by controller ownerReference; "" when nothing is.
func ownedObjects(t *testing.T, c client.Client, ns string, deployUID, jobUID types.UID) string {
	t.Helper()
	var rss appsv1.ReplicaSetList
	var pods corev1.PodList
	listIn(t, c, ns, &rss)
	listIn(t, c, ns, &pods)
	var rsUID types.UID
	for i := range rss.Items {
		if controlledBy(&rss.Items[i], "apps/v1", "Deployment", deployUID) {
			rsUID = rss.Items[i].UID
		}
	}
	if rsUID == "" {
		return fmt.Sprintf("no ReplicaSet controlled by the Deployment among %d", len(rss.Items))
	}
	ofRS, ofJob := 0, 0
	for i := range pods.Items {
		switch pod := &pods.Items[i]; {
		case controlledBy(pod, "apps/v1", "ReplicaSet", rsUID):
			ofRS++
		case controlledBy(pod, "batch/v1", "Job", jobUID):
			ofJob++
		}
	}
	if ofRS != 3 || ofJob != 1 {
		return fmt.Sprintf("%d pods of the ReplicaSet (want 3), %d of the Job (want 1), %d in all", ofRS, ofJob, len(pods.Items))
	}
	return ""
}

func controlledBy(obj metav1.Object, apiVersion, kind string, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.APIVersion == apiVersion && ref.Kind == kind && ref.UID == uid
}

func listIn(t *testing.T, c client.Client, ns string, list client.ObjectList) {
	t.Helper()
	if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
}
