package admission_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/config"
)

// A rule's policy is on the resources of the watches its kinds name: a
// custom resource called Deployment, not the apps Deployments watched
// implicitly for copyFromOwner, which no rule names.
func TestRulesTakeTheWatchTheRuleNames(t *testing.T) {
	conf, err := config.Parse([]byte("watches:\n- {kind: Deployment, apiVersion: evil.example.com/v1}\n- kind: Pod\nrules:\n" +
		"- {name: mark, kinds: [Deployment.evil.example.com], atCreation: true, setLabels: {example.com/x: v}}\n" +
		"- {name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [team]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	evil := schema.GroupVersionResource{Group: "evil.example.com", Version: "v1", Resource: "deployments"}
	apps := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	watches := []config.ResolvedWatch{
		{GVK: evil.GroupVersion().WithKind("Deployment"), Resource: evil, Namespaced: true},
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespaced: true},
		{GVK: apps.GroupVersion().WithKind("Deployment"), Resource: apps, Namespaced: true, Owner: true, OwnersOnly: true},
	}
	rules := admission.Rules(conf, watches)
	if len(rules) != 1 || len(rules[0].Resources) != 1 || rules[0].Resources[0].GroupVersionResource != evil {
		t.Fatalf("the policy of rule mark is on %+v, want %s only", rules, evil)
	}
}
