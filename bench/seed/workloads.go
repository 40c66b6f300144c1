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

// Workloads returns the objects of app i of namespace ns around its pods: a
// Deployment (0 replicas: on a real cluster it starts nothing), a headless
// Service (no cluster IP: 100k pods' apps would exhaust a small service range)
// and a ConfigMap applied with kubectl (so it carries last-applied-configuration).
func Workloads(ns string, i int) []client.Object {
	app := appName(i)
	labels := map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", BenchLabel: "true"}
	pod := Pod(ns, i)
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: meta(ns, app, labels), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": app}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}, Spec: pod.Spec},
		}},
		&corev1.Service{ObjectMeta: meta(ns, app, labels), Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app.kubernetes.io/name": app},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		}},
		kubectlApplied(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(ns, app+"-config", labels),
			Data: map[string]string{"app.yaml": fmt.Sprintf("listen: :8080\nlogLevel: info\nupstream: http://%s-backend\ncacheSize: 512Mi\n", app)}}),
	}
}

func meta(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
}

// kubectlApplied adds the annotation `kubectl apply` leaves: the object as applied.
func kubectlApplied(cm *corev1.ConfigMap) *corev1.ConfigMap {
	applied, _ := json.Marshal(cm) // a ConfigMap always marshals
	cm.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied) + "\n"}
	return cm
}
