package rulecontroller_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A write from a stale cache must not land on the wrong object: every write
// carries the cached object's UID, so a write for an object that is gone does
// not create a metadata-only one in its place, and a write for an object
// whose name a new object took does not touch the new one.
func TestWritesFromAStaleCacheCarryTheObjectsUID(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "stale", map[string]string{"team": "a"})
	for _, name := range []string{"deleted", "recreated"} {
		configMap(t, c, name, nil)
	}
	gate := &testkit.StreamGate{Resource: "configmaps"}
	startInstanceVia(t, "watches:\n- kind: ConfigMap\n  namespaces: [stale]\nrules:\n- name: stale-team\n  kinds: [ConfigMap]\n  copyFromNamespace: {labels: [team]}\n",
		tuning{}, gate.Wrap)
	testkit.WaitFor(t, "both ConfigMaps to get team=a", testkit.Timeout, func() bool {
		return configMapLabels(t, c, "deleted")["team"] == "a" && configMapLabels(t, c, "recreated")["team"] == "a"
	})

	gate.Pause() // metawatch's ConfigMaps stop changing from here on
	for _, name := range []string{"deleted", "recreated"} {
		if err := c.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "stale", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	configMap(t, c, "recreated", map[string]string{"owner": "someone-else"})
	before := reconcilesOf(t, "configmap")
	testkit.MergePatch(t, c, namespaceObject("stale"), "kubectl-label", `{"metadata":{"labels":{"team":"b"}}}`)
	testkit.WaitFor(t, "metawatch to reconcile both ConfigMaps from its stale cache", testkit.Timeout, func() bool { return reconcilesOf(t, "configmap") >= before+2 })

	err := c.Get(t.Context(), client.ObjectKey{Namespace: "stale", Name: "deleted"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the deleted ConfigMap exists again (err %v): a write from the stale cache created it", err)
	}
	if l := configMapLabels(t, c, "recreated"); l["team"] != "" {
		t.Errorf("the new ConfigMap named like a deleted one got team=%q from a write meant for the old one", l["team"])
	}
	gate.Resume()
	testkit.WaitFor(t, "the new ConfigMap to be labelled once the cache caught up", testkit.Timeout, func() bool { return configMapLabels(t, c, "recreated")["team"] == "b" })
}

func configMap(t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "stale", Name: name, Labels: labels}, Data: map[string]string{"k": "v"}}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
}

func configMapLabels(t *testing.T, c client.Client, name string) map[string]string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "stale", Name: name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return cm.Labels
}
