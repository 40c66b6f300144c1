package wire_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
	"github.com/metawatch/metawatch/pkg/wire"
)

// On a real API server's metadata watch (the watch-list stream informers use)
// and list, other managers' managedFields are gone before client-go decodes:
// there is no transform in this path, so what the client returns is what the
// transport left.
func TestManagedFieldsAreStrippedBeforeDecoding(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "strip", nil)
	testkit.Pod(t, c, "strip", "p1", nil)
	client, err := metadata.NewForConfig(wire.StripManagedFields(cp.Config, []string{authority.DefaultFieldManager}, wire.Options{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	pods := client.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("strip")
	list, err := pods.List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || len(list.Items[0].ManagedFields) != 0 {
		t.Fatalf("list: %v, %+v: want one pod without managedFields", err, list)
	}
	w, err := pods.Watch(t.Context(), metav1.ListOptions{
		SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	event := <-w.ResultChan()
	obj, ok := event.Object.(*metav1.PartialObjectMetadata)
	if !ok || obj.Name != "p1" || len(obj.ManagedFields) != 0 {
		t.Fatalf("watch event %s %T %+v: want p1 without managedFields", event.Type, event.Object, event.Object)
	}
}
