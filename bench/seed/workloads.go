package seed

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NamespaceObject is the k-th namespace of the population as a platform team
// applies it with kubectl: a few labels, and the last-applied-configuration
// that leaves (what a report's index of Namespaces must not keep).
func NamespaceObject(k int) *corev1.Namespace {
	return kubectlApplied(&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{
		Name: NamespaceName(k), Labels: map[string]string{BenchLabel: "true", "environment": "production", "owner": fmt.Sprintf("platform-%d", k%7)},
		Annotations: map[string]string{"scheduler.alpha.kubernetes.io/defaultTolerations": `[{"key":"dedicated","operator":"Equal","value":"shop","effect":"NoSchedule"}]`},
	}})
}

// Workloads returns the objects of app i of namespace ns around its pods: the
// ReplicaSet its pods' owner reference names (owner returns it), a
// Deployment (0 replicas: on a real cluster it starts nothing) applied with
// kubectl (so it carries last-applied-configuration, its pod template
// included: a few KB), a headless Service (no cluster IP: 100k pods' apps
// would exhaust a small service range) and a ConfigMap applied with kubectl.
func Workloads(ns string, i int) []client.Object {
	app := appName(i)
	pod := Pod(ns, i)
	labels := map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "team": pod.Labels["team"], BenchLabel: "true"}
	return []client.Object{
		owner(ns, i),
		kubectlApplied(&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta(ns, app, labels), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": app}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}, Spec: pod.Spec},
		}}),
		&corev1.Service{ObjectMeta: meta(ns, app, labels), Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app.kubernetes.io/name": app},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		}},
		kubectlApplied(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(ns, app+"-config", labels),
			Data: map[string]string{"app.yaml": fmt.Sprintf("listen: :8080\nlogLevel: info\nupstream: http://%s-backend\ncacheSize: 512Mi\n", app)}}),
	}
}

// ownerSelector is a selector of the pods' owner that no pod matches.
var ownerSelector = map[string]string{"metawatch.dev/bench-owner": "none"}

// owner is the ReplicaSet the pods of app i name as their owner, so that on
// a real cluster the garbage collector keeps them (it deletes pods whose
// owner is gone). No controller touches it or them: 0 replicas, a selector no
// pod matches, labels the app's Deployment does not select, and the pods'
// owner references do not say it controls them (its controller would then
// take them off pods its selector does not match). As a Deployment's
// ReplicaSet, it has the pods' template and the revision annotations.
func owner(ns string, i int) *appsv1.ReplicaSet {
	pod := Pod(ns, i)
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: ownerSelector}, Spec: pod.Spec}
	rs := &appsv1.ReplicaSet{ObjectMeta: meta(ns, ownerName(i), map[string]string{"team": pod.Labels["team"], BenchLabel: "true"}), Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: ownerSelector}, Template: template}}
	rs.Annotations = map[string]string{"deployment.kubernetes.io/desired-replicas": "0", "deployment.kubernetes.io/max-replicas": "1", "deployment.kubernetes.io/revision": "1"}
	return rs
}

func meta(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
}

// kubectlApplied adds the annotation `kubectl apply` leaves: the object as
// applied (obj has its apiVersion and kind set, as a manifest does).
func kubectlApplied[T client.Object](obj T) T {
	applied, _ := json.Marshal(obj) // a built-in object always marshals
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["kubectl.kubernetes.io/last-applied-configuration"] = string(applied) + "\n"
	obj.SetAnnotations(annotations)
	return obj
}
