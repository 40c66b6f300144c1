package main_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// auditedKinds are the kinds every sharded replica caches whole that the
// test audits, with the violating objects made of each.
var auditedKinds = []struct {
	kind      string
	violators int
}{{"Namespace", 6}, {"Node", 4}}

const auditRule = "shard-owner"

// Kinds every sharded replica caches whole (Namespaces, Nodes) are audited by
// the replica holding each object's bucket only: metawatch_rule_violations
// and metawatch_rule_objects_off summed over the replicas are the number of
// violating objects, and the aggregate MissingRequiredMetadata Events count
// each once (a Namespace's in itself, the Nodes' together on the selectors
// ConfigMap). When a replica joins, the buckets that move go with their
// counts (the old holder drops them, the new one counts them) and a moved
// object may be told once more, by its new holder; when it leaves, they
// come back.
func TestShardedReplicasAuditEachObjectOnce(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "sharded-audit"
	testkit.Namespace(t, c, ns, nil)
	applySelectors(t, c, ns, "watches:\n- kind: Namespace\n  labelSelector: audit-shard=yes\n- kind: Node\n  labelSelector: audit-shard=yes\n"+
		"rules:\n- {name: "+auditRule+", kinds: [Namespace, Node], requireLabels: [owner]}\n")
	a, b := startShardedReplica(t, ns, "replica-a"), startShardedReplica(t, ns, "replica-b")
	for _, r := range []*shardedReplica{a, b} {
		waitHTTP200(t, "http://"+r.probe+"/readyz", r.stderr)
	}
	waitBucketsHeldAsAssigned(t, c, ns, "replica-a", "replica-b")
	objects := auditedObjects(t, c)

	waitAuditExact(t, c, ns, objects, "two settled replicas", a, b)
	settled := auditEvents(t, c, ns, objects)
	for _, o := range objects {
		if n := settled[eventKey(o)]; o.kind == "Namespace" && n != 1 {
			t.Errorf("%s %s is counted %d times in MissingRequiredMetadata Events from two replicas, want 1", o.kind, o.name, n)
		}
	}
	if n := settled["Node"]; n != nodeViolators() {
		t.Errorf("the Nodes are counted %d times in MissingRequiredMetadata Events from two replicas, want %d", n, nodeViolators())
	}

	before := sharding.Assign([]string{"replica-a", "replica-b"})
	joined := startShardedReplica(t, ns, "replica-c")
	waitBucketsHeldAsAssigned(t, c, ns, "replica-a", "replica-b", "replica-c")
	waitAuditExact(t, c, ns, objects, "a third replica taking its buckets", a, b, joined)
	after := sharding.Assign([]string{"replica-a", "replica-b", "replica-c"})
	events, moved, movedNodes := auditEvents(t, c, ns, objects), 0, 0
	for uid, o := range objects {
		bucket := sharding.BucketOf(uid)
		if before[bucket] != after[bucket] {
			moved++
			if o.kind == "Node" {
				movedNodes++
			}
		}
		if o.kind != "Namespace" {
			continue
		}
		want := map[bool]string{true: "1 or 2 (its new holder may say it once more)", false: "1"}[before[bucket] != after[bucket]]
		if n := events[eventKey(o)]; n < 1 || n > 2 || (before[bucket] == after[bucket] && n != 1) {
			t.Errorf("%s %s (bucket %s, %s -> %s) is counted %d times in MissingRequiredMetadata Events, want %s", o.kind, o.name, bucket, before[bucket], after[bucket], n, want)
		}
	}
	if n, nodes := events["Node"], nodeViolators(); n < nodes || n > nodes+movedNodes {
		t.Errorf("the Nodes are counted %d times in MissingRequiredMetadata Events, want %d to %d (%d moved, each may be told once more)", n, nodes, nodes+movedNodes, movedNodes)
	}

	t.Logf("a third replica joining moved %d of the %d violating objects' buckets", moved, len(objects))

	joined.stop(t, syscall.SIGTERM)
	waitBucketsHeldAsAssigned(t, c, ns, "replica-a", "replica-b")
	waitAuditExact(t, c, ns, objects, "the third replica's clean stop", a, b)
}

// auditedObject is a violating object of the test, by uid.
type auditedObject struct{ kind, name string }

// auditedObjects creates the watched Namespaces and Nodes, each kind's
// violators without the required label and one with it, and returns the
// violators by uid.
func auditedObjects(t *testing.T, c client.Client) map[types.UID]auditedObject {
	t.Helper()
	out := map[types.UID]auditedObject{}
	for _, k := range auditedKinds {
		for i := range k.violators + 1 {
			labels := map[string]string{"audit-shard": "yes"}
			if i == k.violators {
				labels["owner"] = "platform"
			}
			meta := metav1.ObjectMeta{Name: fmt.Sprintf("audit-shard-%s-%d", strings.ToLower(k.kind), i), Labels: labels}
			var obj client.Object = &corev1.Namespace{ObjectMeta: meta}
			if k.kind == "Node" {
				obj = &corev1.Node{ObjectMeta: meta}
			}
			if err := c.Create(t.Context(), obj); err != nil {
				t.Fatal(err)
			}
			testkit.DeleteAtCleanup(t, c, obj)
			if i < k.violators {
				out[obj.GetUID()] = auditedObject{kind: k.kind, name: obj.GetName()}
			}
		}
	}
	return out
}

// waitAuditExact waits until each replica's metawatch_rule_violations and
// metawatch_rule_objects_off{reason=violation} count, for each audited kind,
// the violators of the buckets it holds (as rendezvous hashing assigns them
// among the replicas), which add up to the kind's violators, and every
// violator is counted in the aggregate Events; it fails with the last counts seen.
func waitAuditExact(t *testing.T, c client.Client, ns string, objects map[types.UID]auditedObject, after string, replicas ...*shardedReplica) {
	t.Helper()
	var names []string
	for _, r := range replicas {
		names = append(names, r.name)
	}
	owners := sharding.Assign(names)
	want := map[string]map[string]int{} // kind -> replica -> violators of its buckets
	for uid, o := range objects {
		if want[o.kind] == nil {
			want[o.kind] = map[string]int{}
		}
		want[o.kind][owners[sharding.BucketOf(uid)]]++
	}
	deadline := time.Now().Add(testkit.Timeout)
	for {
		ok, seen := auditCounts(replicas, want)
		events := auditEvents(t, c, ns, objects)
		for _, o := range objects {
			ok = ok && events[eventKey(o)] > 0
		}
		ok = ok && events["Node"] >= nodeViolators()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: the audits of %d replicas never counted each violator once, by its bucket's holder, within %s; last seen:\n%s",
				after, len(replicas), testkit.Timeout, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// auditCounts reports whether every replica publishes, for each audited
// kind, the violators want gives it, and says what each publishes.
func auditCounts(replicas []*shardedReplica, want map[string]map[string]int) (exact bool, seen string) {
	exact = true
	var lines []string
	for _, k := range auditedKinds {
		series := map[string]string{
			"metawatch_rule_violations":  fmt.Sprintf(`metawatch_rule_violations{kind=%q,rule=%q}`, k.kind, auditRule),
			"metawatch_rule_objects_off": fmt.Sprintf(`metawatch_rule_objects_off{kind=%q,namespace="",reason="violation",rule=%q}`, k.kind, auditRule),
		}
		for name, s := range series {
			sum, each := 0.0, []string{}
			for _, r := range replicas {
				v := max(0, r.metric(s))
				sum += v
				exact = exact && v == float64(want[k.kind][r.name])
				each = append(each, fmt.Sprintf("%s %v of its %d", r.name, v, want[k.kind][r.name]))
			}
			lines = append(lines, fmt.Sprintf("%s %s: sum %v, want %d (%s)", k.kind, name, sum, k.violators, strings.Join(each, ", ")))
		}
	}
	return exact, strings.Join(lines, "\n")
}

// auditEvents counts what metawatch's aggregate MissingRequiredMetadata
// Events say of the audited objects, a series counting as its length: per
// Namespace (its Events are in itself, eventKey), and the Nodes together
// (cluster-scoped: on the selectors ConfigMap, in namespace ns).
func auditEvents(t *testing.T, c client.Client, ns string, objects map[types.UID]auditedObject) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, o := range objects {
		if o.kind == "Namespace" {
			out[eventKey(o)] = testkit.Occurrences(testkit.AggregateEvents(t, c, o.name, rulecontroller.ReasonMissingRequired, auditRule))
		}
	}
	for _, e := range testkit.AggregateEvents(t, c, ns, rulecontroller.ReasonMissingRequired, auditRule) {
		if e.Regarding.Kind == "ConfigMap" {
			out["Node"] += testkit.Occurrences([]eventsv1.Event{e})
		}
	}
	return out
}

// eventKey is where auditEvents counts o.
func eventKey(o auditedObject) string {
	if o.kind == "Node" {
		return "Node"
	}
	return o.kind + "/" + o.name
}

// nodeViolators is how many violating Nodes the test makes.
func nodeViolators() int {
	for _, k := range auditedKinds {
		if k.kind == "Node" {
			return k.violators
		}
	}
	return 0
}
