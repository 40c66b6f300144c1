package admission

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/config"
)

// request is a create of a name in ns, of group/resource, with labels.
type request struct {
	group, resource, ns, name, nodeName string
	labels                              map[string]string
}

func evalWatched(t *testing.T, expr string, r request) bool {
	t.Helper()
	l := map[string]any{}
	for k, v := range r.labels {
		l[k] = v
	}
	spec := map[string]any{}
	if r.nodeName != "" {
		spec["nodeName"] = r.nodeName
	}
	return evalCEL(t, expr, map[string]any{
		"request": map[string]any{"resource": map[string]any{"group": r.group, "resource": r.resource}, "namespace": r.ns},
		"object":  map[string]any{"metadata": map[string]any{"name": r.name, "labels": l}, "spec": spec},
	})
}

func TestWatchedCELKeepsToWhatTheWatchCaches(t *testing.T) {
	web, _ := labels.Parse("app=web")
	notProbe, _ := fields.ParseSelector("metadata.name!=probe,metadata.namespace!=kube-system,status.phase!=Succeeded,spec.nodeName!=retired")
	pods := Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespaced: true,
		Namespaces: []string{"shop", "kube-system"}, Label: web, Field: notProbe}
	deployments := Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespaced: true}
	cases := map[string]struct {
		req  request
		want bool
	}{
		"a pod the watch caches":                  {req: request{resource: "pods", ns: "shop", name: "a", labels: map[string]string{"app": "web"}}, want: true},
		"a pod in a namespace the watch leaves":   {req: request{resource: "pods", ns: "other", name: "a", labels: map[string]string{"app": "web"}}},
		"a pod its label selector leaves":         {req: request{resource: "pods", ns: "shop", name: "a", labels: map[string]string{"app": "db"}}},
		"a pod without labels":                    {req: request{resource: "pods", ns: "shop", name: "a"}},
		"a pod its field selector leaves by name": {req: request{resource: "pods", ns: "shop", name: "probe", labels: map[string]string{"app": "web"}}},
		"a pod its field selector leaves by namespace": {
			req: request{resource: "pods", ns: "kube-system", name: "a", labels: map[string]string{"app": "web"}}},
		"a pod bound to a node the field selector leaves": {
			req: request{resource: "pods", ns: "shop", name: "a", nodeName: "retired", labels: map[string]string{"app": "web"}}},
		"a pod bound to another node": {
			req: request{resource: "pods", ns: "shop", name: "a", nodeName: "n1", labels: map[string]string{"app": "web"}}, want: true},
		"a Deployment, whose watch takes every one": {req: request{group: "apps", resource: "deployments", ns: "other", name: "d"}, want: true},
		"a resource of the same name in another group": {
			req: request{group: "example.com", resource: "deployments", ns: "shop", name: "d"}},
	}
	expr, err := watchedCEL([]Resource{pods, deployments})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := evalWatched(t, expr, tc.req); got != tc.want {
				t.Errorf("CEL %s on %+v: %v, want %v", expr, tc.req, got, tc.want)
			}
		})
	}
}

func TestWatchedCELOfWholeWatchesIsTrue(t *testing.T) {
	expr, err := watchedCEL([]Resource{{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespaced: true}})
	if err != nil || expr != "true" {
		t.Errorf("watchedCEL of a whole watch: %q, %v; want true", expr, err)
	}
}

// Every field the configuration lets a watch of a kind with atCreation
// select on has a CEL equivalent, and no other field does.
func TestFieldsAtAdmissionAreTheConfigurations(t *testing.T) {
	for kind, resource := range map[string]string{"Pod": "pods", "Deployment": "deployments", "Namespace": "namespaces"} {
		got := sets.KeySet(fieldValues[""]).Union(sets.KeySet(fieldValues[resource]))
		if want := sets.New(config.AdmissionFieldsOf(kind)...); !got.Equal(want) {
			t.Errorf("%s: fields with a CEL equivalent %v, the configuration allows %v", kind, sets.List(got), sets.List(want))
		}
	}
	sel, _ := fields.ParseSelector("status.podIP=10.0.0.1")
	_, err := watchedCEL([]Resource{{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Field: sel}})
	if err == nil || !strings.Contains(err.Error(), "admission does not know status.podIP") {
		t.Errorf("a field selector on status.podIP: %v", err)
	}
}
