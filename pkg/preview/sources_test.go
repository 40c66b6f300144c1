package preview

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/metawatch/metawatch/pkg/config"
)

// A source keeps of a Namespace or an owner only what the rules read:
// the keys they copy and the controlling owner, not the other labels and
// annotations (last-applied included); objects of other kinds are not
// kept at all.
func TestSourcesKeepOnlyWhatTheRulesCopy(t *testing.T) {
	const conf = "watches: [{kind: Pod}]\nrules:\n" +
		"- {name: team, kinds: [Pod], copyFromNamespace: {labels: [team], annotations: [contact]}}\n" +
		"- {name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [cost-center]}}\n"
	const lastApplied = "kubectl.kubernetes.io/last-applied-configuration: '{\"big\": true}'"
	cases := map[string]struct {
		object string
		want   string // what is kept, by uid
	}{
		"a Namespace: the labels and annotations copyFromNamespace copies": {
			object: "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, uid: u, labels: {team: red, env: prod}, annotations: {contact: joe, " + lastApplied + "}}\n",
			want:   "Namespace /shop map[team:red] map[contact:joe] controller <nil>"},
		"a Deployment: the labels copyFromOwner copies": {
			object: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop, uid: u, labels: {cost-center: cc, team: red, app: web}, annotations: {" + lastApplied + "}}\n",
			want:   "Deployment.apps shop/web map[cost-center:cc] map[] controller <nil>"},
		"a ReplicaSet, on the chain to a Deployment: its controller, no key": {
			object: "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  {name: web-5d, namespace: shop, uid: u, labels: {cost-center: cc, pod-template-hash: 5d},\n" +
				"   ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: u-d, controller: true}]}\n",
			want: "ReplicaSet.apps shop/web-5d map[] map[] controller Deployment/web"},
		"a Pod, which no chain passes through: nothing": {
			object: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop, uid: u, labels: {team: red}}\n",
			want:   "nothing"},
		"a StatefulSet, which no rule copies from: nothing": {
			object: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: shop, uid: u, labels: {cost-center: cc}}\n",
			want:   "nothing"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(conf))
			if err != nil {
				t.Fatal(err)
			}
			p, err := New(Options{Config: c})
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Read(strings.NewReader(tc.object))
			if err != nil {
				t.Fatal(err)
			}
			p.AddSource(objs[0])
			if got := keptOf(p.src, objs[0]); got != tc.want {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
		})
	}
}

func keptOf(s *sources, obj *unstructured.Unstructured) string {
	src, ok := s.byUID[obj.GetUID()]
	if !ok {
		return "nothing"
	}
	name := src.namespace + "/" + src.name
	if ns, ok := s.namespaces[obj.GetName()]; ok && ns != src {
		return "a Namespace kept twice"
	}
	controller := "<nil>"
	if src.controller != nil {
		controller = src.controller.Kind + "/" + src.controller.Name
	}
	return fmt.Sprintf("%s %s %v %v controller %s", src.kind, name, src.meta.Labels, src.meta.Annotations, controller)
}
