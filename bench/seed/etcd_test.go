package seed

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }

// What EtcdCopy writes, the API server serves as if it had been created
// through it: every pod of the grown population, each the same as its
// template in the first namespace but for its namespace and uids, owner
// references naming the ReplicaSets of its own namespace, Namespaces
// labelled with their own names, a kubectl-applied ConfigMap whose
// last-applied configuration names its own namespace, and no uid twice.
func TestEtcdCopyIsServedAsCreated(t *testing.T) {
	controlplane.SkipIfShort(t)
	cp.SkipIfExisting(t)
	ctx := t.Context()
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const per, total = 20, 75 // a partial last namespace too
	population := Population{Client: c, PerNamespace: per, Concurrency: 4, Log: testLog{t}, Lean: true}
	if err := population.Grow(ctx, 0, per); err != nil {
		t.Fatal(err)
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{cp.EtcdURL()}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	copier := EtcdCopy{Client: etcd, Prefix: "/registry", PerNamespace: per, Concurrency: 3, Log: testLog{t}}
	if err := copier.Grow(ctx, 0, total); err == nil {
		t.Error("a copy starting in the first namespace was accepted; want it refused (the first namespace is the template)")
	}
	if err := cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	copyErr := copier.Grow(ctx, per, total)
	if err := cp.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	if copyErr != nil {
		t.Fatal(copyErr)
	}
	var pods corev1.PodList
	for deadline := time.Now().Add(testkit.Timeout); len(pods.Items) != total && time.Now().Before(deadline); time.Sleep(time.Second) {
		if err := c.List(ctx, &pods, client.MatchingLabels{BenchLabel: "true"}); err != nil {
			t.Log(err)
		}
	}
	if len(pods.Items) != total {
		t.Fatalf("the API server lists %d pods, want %d", len(pods.Items), total)
	}
	checkPods(t, c, pods.Items, per)
	checkNamespaceObjects(t, c, total/per)
}

func checkPods(t *testing.T, c client.Client, pods []corev1.Pod, per int) {
	t.Helper()
	templates := map[string]*corev1.Pod{}
	for i := range pods {
		if pods[i].Namespace == NamespaceName(0) {
			templates[pods[i].Name] = &pods[i]
		}
	}
	uids := map[string]string{}
	for i := range pods {
		pod := &pods[i]
		if other, ok := uids[string(pod.UID)]; ok {
			t.Errorf("pods %s and %s/%s have the same uid %s", other, pod.Namespace, pod.Name, pod.UID)
		}
		uids[string(pod.UID)] = pod.Namespace + "/" + pod.Name
		if pod.Namespace == NamespaceName(0) {
			continue
		}
		if err := SameBut(templates[pod.Name], pod); err != nil {
			t.Errorf("%s/%s: %v", pod.Namespace, pod.Name, err)
		}
		var owner appsv1.ReplicaSet
		ref := pod.OwnerReferences[0]
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, &owner); err != nil {
			t.Errorf("%s/%s: its owner %s: %v", pod.Namespace, pod.Name, ref.Name, err)
		} else if owner.UID != ref.UID {
			t.Errorf("%s/%s names owner uid %s, its namespace's ReplicaSet %s has %s", pod.Namespace, pod.Name, ref.UID, owner.Name, owner.UID)
		}
	}
	if len(templates) != per {
		t.Errorf("%d pods in the first namespace, want %d", len(templates), per)
	}
}

func checkNamespaceObjects(t *testing.T, c client.Client, namespaces int) {
	t.Helper()
	ownerUIDs := map[string]bool{}
	for k := 0; k <= namespaces; k++ {
		name := NamespaceName(k)
		var ns corev1.Namespace
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
			t.Fatalf("namespace %s: %v", name, err)
		}
		if got := ns.Labels["kubernetes.io/metadata.name"]; got != name || ns.Labels[BenchLabel] != "true" {
			t.Errorf("namespace %s has labels %v, want its own name and %s", name, ns.Labels, Selector)
		}
		var sets appsv1.ReplicaSetList
		var deployments appsv1.DeploymentList
		var services corev1.ServiceList
		var configMaps corev1.ConfigMapList
		for _, list := range []client.ObjectList{&sets, &deployments, &services, &configMaps} {
			if err := c.List(t.Context(), list, client.InNamespace(name), client.MatchingLabels{BenchLabel: "true"}); err != nil {
				t.Fatal(err)
			}
		}
		if len(sets.Items) != AppsPerNamespace || len(deployments.Items) != AppsPerNamespace || len(services.Items) != AppsPerNamespace || len(configMaps.Items) != AppsPerNamespace {
			t.Errorf("namespace %s has %d ReplicaSets, %d Deployments, %d Services and %d ConfigMaps, want %d each",
				name, len(sets.Items), len(deployments.Items), len(services.Items), len(configMaps.Items), AppsPerNamespace)
		}
		for _, rs := range sets.Items {
			if ownerUIDs[string(rs.UID)] {
				t.Errorf("ReplicaSet %s/%s has the uid of another namespace's", name, rs.Name)
			}
			ownerUIDs[string(rs.UID)] = true
		}
		for _, cm := range configMaps.Items {
			if applied := cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !strings.Contains(applied, fmt.Sprintf("%q", name)) {
				t.Errorf("ConfigMap %s/%s: last-applied-configuration %s does not name its namespace", name, cm.Name, applied)
			}
		}
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
