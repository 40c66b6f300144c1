package eventdigest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// The API server takes the aggregate Events as written: a new one with its
// series, then patches of the series' count; a cluster-scoped key's Event
// regards the ConfigMap it is given.
func TestTheAPIServerTakesTheAggregateEvents(t *testing.T) {
	controlplane.SkipIfShort(t)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	for _, ns := range []string{"digest-a", "digest-config"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sink, err := eventdigest.NewSink(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "digest-config", Name: "selectors"}
	d := &eventdigest.Digest{Sink: sink, Instance: "metawatch-test", Log: testr.New(t), ClusterRegarding: func() *corev1.ObjectReference { return cm }}
	pods := eventdigest.Key{Type: corev1.EventTypeWarning, Reason: "MissingRequiredMetadata", Action: "Audit", Rule: "team", Kind: "Pod", Namespace: "digest-a", Message: "rule team: missing required metadata"}
	nodes := eventdigest.Key{Type: corev1.EventTypeWarning, Reason: "MissingRequiredMetadata", Action: "Audit", Rule: "zone", Kind: "Node", Message: "rule zone: missing required metadata"}
	for i := range 50 {
		d.Add(pods, eventdigest.Occurrence{Object: fmt.Sprintf("pod-%02d", i), Detail: strings.Repeat("missing labels team ", 20)})
	}
	d.Add(nodes, eventdigest.Occurrence{Object: "node-1", Detail: "missing labels zone"})
	d.Flush(ctx)
	for i := 50; i < 80; i++ {
		d.Add(pods, eventdigest.Occurrence{Object: fmt.Sprintf("pod-%02d", i)})
	}
	d.Flush(ctx)
	if n := d.Pending(); n != 0 {
		t.Fatalf("%d occurrences still wait: the API server refused a write", n)
	}

	list, err := cs.EventsV1().Events("digest-a").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d Events in digest-a, want 1", len(list.Items))
	}
	e := list.Items[0]
	if e.Series == nil || e.Series.Count != 80 || e.Regarding.Kind != "Namespace" || e.Regarding.Name != "digest-a" {
		t.Errorf("Event %+v: want a series of 80 regarding Namespace digest-a", e)
	}
	if !strings.Contains(e.Note, "50 Pod objects") || !strings.Contains(e.Note, "pod-00") {
		t.Errorf("note %q: want the first write's count and its smallest examples", e.Note)
	}
	list, err = cs.EventsV1().Events("digest-config").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Regarding.Kind != "ConfigMap" || list.Items[0].Series != nil {
		t.Errorf("Events in digest-config: %+v; want one without series regarding the ConfigMap", list.Items)
	}
}
