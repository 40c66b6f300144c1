package config_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// Offline, the scope of every built-in kind is the one an API server that
// serves every API group (alpha and beta too) says in its discovery: a
// cluster-scoped kind missing from the table would pass --writable-kinds=*.
func TestBuiltInScopeIsTheScopeOfEveryServedGroup(t *testing.T) {
	controlplane.SkipIfShort(t)
	all, err := controlplane.Start(t.Context(), controlplane.Options{ExtraAPIServerArgs: map[string]string{
		"runtime-config": "api/all=true",
		"feature-gates":  controlplane.FeatureGates + ",AllAlpha=true,AllBeta=true",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = all.Stop() })
	dc, err := discovery.NewDiscoveryClientForConfig(all.Config)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			gvk := gv.WithKind(r.Kind)
			listable := strings.Contains(strings.Join(r.Verbs, ","), "list")
			if strings.Contains(r.Name, "/") || !clientgoscheme.Scheme.Recognizes(gvk) || !listable {
				continue
			}
			checked++
			namespaced, known := config.BuiltInScope(gvk.GroupKind())
			if !known || namespaced != r.Namespaced {
				t.Errorf("%s: config.BuiltInScope says namespaced=%v known=%v, the server says namespaced=%v", gvk, namespaced, known, r.Namespaced)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("discovery served %d listable built-in kinds, want the API server's dozens", checked)
	}
}
