// Package seed creates realistic objects for the bench harness: pods shaped
// like production ones, whose managedFields come from two managers (a creator
// and a status writer playing the kubelet), as on a real cluster, and around
// them the Namespaces, Deployments, Services and kubectl-applied ConfigMaps
// (with kubectl.kubernetes.io/last-applied-configuration) of their apps.
package seed

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Selector selects every object the harness creates (it labels them all).
const Selector = BenchLabel + "=true"

// BenchLabel marks the objects the harness creates.
const BenchLabel = "metawatch.dev/bench"

// AppsPerNamespace is the number of apps (Deployment, Service, ConfigMap) in each namespace.
const AppsPerNamespace = 50

// Pod returns the i-th realistic pod of namespace ns: 2 containers with env,
// probes, resources and volume mounts, 7 labels, 4 annotations, and an owner
// reference to its ReplicaSet (with a placeholder uid: Population.Grow sets
// the real one). Pods of one app have the same labels, as the
// pods of one ReplicaSet do.
func Pod(ns string, i int) *corev1.Pod {
	app := appName(i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    ns,
			Name:         fmt.Sprintf("%s-%08d", app, i),
			GenerateName: app + "-" + templateHash(i) + "-",
			Labels: map[string]string{
				"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/version": "1.4.2",
				"pod-template-hash": templateHash(i), "team": fmt.Sprintf("team-%d", i%AppsPerNamespace%7),
				"environment": "production", BenchLabel: "true",
			},
			Annotations: map[string]string{
				"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
				"kubectl.kubernetes.io/default-container": "app", "checksum/config": fmt.Sprintf("%064x", i%AppsPerNamespace),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: ownerName(i),
				UID: types.UID(fmt.Sprintf("6f1c2d3e-0000-4000-8000-%012d", i%AppsPerNamespace)), Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			// No scheduler is called this and no node matches: on a real cluster
			// (kind, --local-cluster) bench pods stay Pending and cost neither the
			// scheduler nor a kubelet anything.
			SchedulerName: "metawatch-bench-none",
			NodeSelector:  map[string]string{"metawatch.dev/bench-node": "none"},
			Containers:    []corev1.Container{container("app", app, 8080), container("sidecar", "envoy", 15001)},
			Volumes:       []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}}},
		},
	}
}

// LeanPod is pod with its metadata unchanged and one bare container (a name
// and an image) instead of its containers and volumes. kube-apiserver keeps
// every pod decoded in its watch cache: realistic pods cost it 61 KB of live
// heap each (measured at 80k pods), so 300k of them need about 18 GB, more
// than this machine has beside etcd. A metadata-only client receives the same
// labels, annotations and owner reference; only the other managers'
// managedFields entries are shorter, since they list fewer spec fields.
func LeanPod(pod *corev1.Pod) *corev1.Pod {
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: pod.Spec.Containers[0].Image}}
	pod.Spec.Volumes = nil
	return pod
}

func appName(i int) string      { return fmt.Sprintf("app-%d", i%AppsPerNamespace) }
func ownerName(i int) string    { return appName(i) + "-" + templateHash(i) }
func templateHash(i int) string { return fmt.Sprintf("%x", 0x5d4c3b2a+i%AppsPerNamespace) }

func container(name, image string, port int32) corev1.Container {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(port)}}, PeriodSeconds: 10}
	return corev1.Container{
		Name:  name,
		Image: "registry.example/" + image + ":1.4.2",
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port}},
		Env: []corev1.EnvVar{
			{Name: "LOG_LEVEL", Value: "info"}, {Name: "REGION", Value: "eu-west-1"}, {Name: "FEATURE_FLAGS", Value: "checkout,search"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		LivenessProbe:  probe,
		ReadinessProbe: probe,
		VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + name}},
	}
}

// RunningStatus is the status a kubelet would write for pod.
func RunningStatus(pod *corev1.Pod) corev1.PodStatus {
	now := metav1.Now()
	status := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3", HostIP: "192.168.0.10", StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image + "@sha256:0123456789abcdef", Ready: true,
			ContainerID: "containerd://" + pod.Name + c.Name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return status
}
