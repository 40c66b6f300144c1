package config_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/apiserver"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

func TestResolveMapsKindsWithTheClusterRESTMapper(t *testing.T) {
	controlplane.SkipIfShort(t)
	installWidgetCRD(t)
	cases := map[string]struct {
		yaml        string
		want        []schema.GroupVersionKind
		wantErr     []string
		wantWarning string
	}{
		"built-in kinds without apiVersion": {
			yaml: "watches:\n- kind: Pod\n- kind: Deployment\n- kind: Event\n- kind: Node\n",
			want: []schema.GroupVersionKind{{Version: "v1", Kind: "Pod"}, {Group: "apps", Version: "v1", Kind: "Deployment"},
				{Version: "v1", Kind: "Event"}, {Version: "v1", Kind: "Node"}},
		},
		"a pinned apiVersion": {
			yaml: "watches:\n- kind: Event\n  apiVersion: events.k8s.io/v1\n",
			want: []schema.GroupVersionKind{{Group: "events.k8s.io", Version: "v1", Kind: "Event"}},
		},
		"a custom resource is accepted with a warning": {
			yaml:        "watches:\n- kind: Widget\n  apiVersion: example.com/v1\n",
			want:        []schema.GroupVersionKind{{Group: "example.com", Version: "v1", Kind: "Widget"}},
			wantWarning: "watches[0]: Widget.example.com is not a built-in kind; the API server serves custom resources as JSON, not protobuf",
		},
		"an unknown kind": {
			yaml:    "watches:\n- kind: Pod\n- kind: Podz\n",
			wantErr: []string{`watches[1].kind: Invalid value: "Podz": not a built-in kind`},
		},
		"a version the cluster does not serve": {
			yaml:    "watches:\n- kind: Deployment\n  apiVersion: apps/v2\n",
			wantErr: []string{`watches[0].kind: Invalid value: "Deployment": the cluster does not serve apps/v2 Deployment`},
		},
		"the same kind twice, once with apiVersion": {
			yaml:    "watches:\n- kind: Pod\n- kind: Pod\n  apiVersion: v1\n",
			wantErr: []string{`watches[1].kind: Invalid value: "Pod": watches[0] already watches Pod`},
		},
		"namespaces on a cluster-scoped kind": {
			yaml:    "watches:\n- kind: Node\n  namespaces: [default]\n",
			wantErr: []string{"watches[0].namespaces", "Node is cluster-scoped"},
		},
	}
	mapper := newMapper(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			watches, warnings, err := config.Resolve(c, mapper)
			assertErrorContains(t, err, tc.wantErr)
			assertWarning(t, warnings, tc.wantWarning)
			for i, gvk := range tc.want {
				if watches[i].GVK != gvk {
					t.Errorf("watches[%d] resolved to %v, want %v", i, watches[i].GVK, gvk)
				}
			}
		})
	}
}

// The cache keeps the annotations the rules read, and cache.keepAnnotations.
func TestResolveComputesTheAnnotationsToKeep(t *testing.T) {
	controlplane.SkipIfShort(t)
	c, err := config.Parse([]byte(`
watches:
- kind: Pod
- kind: Node
cache: {keepAnnotations: [example.com/keep]}
rules:
- {name: a, kinds: [Pod], setAnnotations: {example.com/set: x}, requireAnnotations: [example.com/required]}
- {name: b, kinds: [Pod], copyFromNamespace: {annotations: [example.com/from-ns]}}
- {name: c, kinds: [Node], removeAnnotations: [example.com/old]}
`))
	if err != nil {
		t.Fatal(err)
	}
	watches, _, err := config.Resolve(c, newMapper(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"Pod":       {"example.com/from-ns", "example.com/keep", "example.com/required", "example.com/set"}, // from-ns: copied onto Pods
		"Node":      {"example.com/keep", "example.com/old"},
		"Namespace": {"example.com/from-ns", "example.com/keep"},
	}
	for _, w := range watches {
		if got := sets.List(w.Annotations); !reflect.DeepEqual(got, want[w.GVK.Kind]) {
			t.Errorf("%s keeps annotations %v, want %v", w.GVK.Kind, got, want[w.GVK.Kind])
		}
	}
	all, _ := config.Parse([]byte("watches: [{kind: Pod}]\ncache: {keepAnnotations: ['*']}\n"))
	watches, _, _ = config.Resolve(all, newMapper(t))
	if watches[0].Annotations != nil {
		t.Errorf(`keepAnnotations ["*"] keeps %v, want every annotation (nil)`, watches[0].Annotations)
	}
}

// copyFromOwner caches the owner chain's kinds: implicitly, keeping only the
// copied keys, or the configuration's own watches of them, which must hold
// every object; the kinds it writes keep their controlling ownerReference.
func TestResolveAddsTheOwnerChain(t *testing.T) {
	controlplane.SkipIfShort(t)
	c, err := config.Parse([]byte(`
watches:
- kind: Pod
- kind: StatefulSet
rules:
- {name: a, kinds: [Pod], copyFromOwner: {kinds: [Deployment, StatefulSet], labels: [cost-center], annotations: [example.com/owner]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	watches, _, err := config.Resolve(c, newMapper(t))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		owner, ownersOnly, keepController bool
		labels, annotations               []string
	}
	wants := map[string]want{
		"Pod":         {keepController: true, annotations: []string{"example.com/owner"}},
		"StatefulSet": {owner: true, keepController: true, annotations: []string{"example.com/owner"}},
		"Deployment":  {owner: true, ownersOnly: true, keepController: true, labels: []string{"cost-center"}, annotations: []string{"example.com/owner"}},
		"ReplicaSet":  {owner: true, ownersOnly: true, keepController: true, labels: []string{}, annotations: []string{}},
	}
	for _, w := range watches {
		got := want{owner: w.Owner, ownersOnly: w.OwnersOnly, keepController: w.KeepController, annotations: sets.List(w.Annotations)}
		if w.Labels != nil {
			got.labels = sets.List(w.Labels)
		}
		if !reflect.DeepEqual(got, wants[w.GVK.Kind]) {
			t.Errorf("%s: %+v, want %+v", w.GVK.Kind, got, wants[w.GVK.Kind])
		}
		delete(wants, w.GVK.Kind)
	}
	if len(wants) > 0 {
		t.Errorf("not watched: %v", wants)
	}
	narrow, _ := config.Parse([]byte("watches:\n- kind: Pod\n- kind: Deployment\n  labelSelector: app=web\n" +
		"rules:\n- {name: a, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [team]}}\n"))
	_, _, err = config.Resolve(narrow, newMapper(t))
	assertErrorContains(t, err, []string{"watches[1]: Invalid value: \"Deployment\": rules[0].copyFromOwner needs every Deployment cached"})
}

func assertErrorContains(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 && err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if len(want) > 0 && err == nil {
		t.Fatalf("Resolve succeeded, want an error with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
}

func assertWarning(t *testing.T, warnings []string, want string) {
	t.Helper()
	if want == "" && len(warnings) > 0 {
		t.Errorf("unexpected warnings %q", warnings)
	}
	if want != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], want)) {
		t.Errorf("warnings %q, want one containing %q", warnings, want)
	}
}

// newMapper is the control plane's RESTMapper; tests that need it are skipped under -short.
func newMapper(t *testing.T) meta.RESTMapper {
	t.Helper()
	controlplane.SkipIfShort(t)
	mapper, err := apiserver.NewRESTMapper(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return mapper
}

// installWidgetCRD serves example.com/v1 Widget, a kind client-go does not know.
func installWidgetCRD(t *testing.T) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr(true),
				}},
			}},
		},
	}
	ctx := t.Context()
	if err := c.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testkit.Timeout)
	for !established(ctx, t, c) {
		if time.Now().After(deadline) {
			t.Fatal("the Widget CRD was not established")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func established(ctx context.Context, t *testing.T, c client.Client) bool {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "widgets.example.com"}, &crd); err != nil {
		t.Fatal(err)
	}
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
