package rulecontroller_test

import (
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// bucketGate admits the writes to the objects of a fixed range of buckets,
// as a replica holding them would, and records which uids it admitted.
type bucketGate struct {
	from, to sharding.Bucket
	mu       sync.Mutex
	admitted map[types.UID]int
}

func (g *bucketGate) Begin(uid types.UID) (func(), bool) {
	if b := sharding.BucketOf(uid); b < g.from || b >= g.to {
		return nil, false
	}
	g.mu.Lock()
	g.admitted[uid]++
	g.mu.Unlock()
	return func() {}, true
}

func (g *bucketGate) Pending(types.UID) bool { return false }

// Two instances, each admitted to half of the buckets, converge every pod
// between them, each writing only the pods of its own buckets, once.
func TestShardGateSplitsWritesBetweenReplicas(t *testing.T) {
	const ns = "shards-0"
	c := testkit.Populated(t, cp, ns, map[string]string{"team": "red"}, 100)
	configYAML := "watches:\n- kind: Pod\n  namespaces: [shards-0]\nrules:\n- name: copy-team\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n"
	gates := []*bucketGate{{from: 0, to: 32, admitted: map[types.UID]int{}}, {from: 32, to: sharding.Buckets, admitted: map[types.UID]int{}}}
	var instances []*instance
	for _, g := range gates {
		instances = append(instances, startInstance(t, configYAML, gated(authority.Single, g, nil)))
	}
	waitAllPods(t, c, "every pod to get its namespace's team", []string{ns}, func(_ string, l map[string]string) bool { return l["team"] == "red" })

	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i, g := range gates {
		g.mu.Lock()
		mine := 0
		for _, p := range pods.Items {
			inRange := sharding.BucketOf(p.UID) >= g.from && sharding.BucketOf(p.UID) < g.to
			if inRange {
				mine++
			}
			if n := g.admitted[p.UID]; n != map[bool]int{true: 1, false: 0}[inRange] {
				t.Errorf("instance %d admitted %d writes to pod %s of bucket %d (its buckets: %d-%d)", i, n, p.Name, sharding.BucketOf(p.UID), g.from, g.to-1)
			}
		}
		g.mu.Unlock()
		if n := instances[i].writes.Load(); n != int64(mine) {
			t.Errorf("instance %d made %d write requests, want one for each of the %d pods of its buckets", i, n, mine)
		}
	}
}

// The Ring is what gates writes when metawatch runs sharded.
var _ authority.ShardGate = (*sharding.Ring)(nil)

// pendingGate refuses every write as pending (the bucket is coming) until
// opened, and counts the refusals of each object.
type pendingGate struct {
	open    atomic.Bool
	mu      sync.Mutex
	refused map[types.UID]int
}

func (g *pendingGate) Begin(uid types.UID) (func(), bool) {
	if g.open.Load() {
		return func() {}, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refused == nil {
		g.refused = map[types.UID]int{}
	}
	g.refused[uid]++
	return func() {}, false
}
func (g *pendingGate) Pending(types.UID) bool { return !g.open.Load() }

// refusedEach reports whether n objects were each refused at least times times.
func (g *pendingGate) refusedEach(n, times int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.refused) < n {
		return false
	}
	for _, k := range g.refused {
		if k < times {
			return false
		}
	}
	return true
}

// A write refused because its bucket is still coming to this replica is
// tried again, not dropped: once the bucket is held, every pod converges
// without any new event.
func TestWritesWaitingForTheirBucketAreRetried(t *testing.T) {
	const ns = "shards-pending"
	c := testkit.Populated(t, cp, ns, map[string]string{"team": "blue"}, 20)
	gate := &pendingGate{}
	inst := startInstance(t, "watches:\n- kind: Pod\n  namespaces: [shards-pending]\nrules:\n- name: copy-team\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n",
		gated(authority.Single, gate, nil))
	waitCached(t, inst, []string{ns}, 20)
	// The controller retries pending writes every second: two rounds refused.
	testkit.WaitFor(t, "each pod's write to be refused twice", testkit.Timeout, func() bool { return gate.refusedEach(20, 2) })
	if n := inst.writes.Load(); n != 0 {
		t.Fatalf("%d writes while every bucket was pending, want none", n)
	}
	gate.open.Store(true)
	waitAllPods(t, c, "every pod to converge once its bucket is held", []string{ns}, func(_ string, l map[string]string) bool { return l["team"] == "blue" })
}

// heldGate admits no write until opened, and says no bucket is coming: the
// objects are another replica's until it takes them over. It counts the
// writes it refused.
type heldGate struct {
	open    atomic.Bool
	refused atomic.Int64
}

func (g *heldGate) Begin(types.UID) (func(), bool) {
	if g.open.Load() {
		return func() {}, true
	}
	g.refused.Add(1)
	return func() {}, false
}
func (g *heldGate) Pending(types.UID) bool { return false }

// gainedBuckets stands for the Ring's buckets coming to this replica: it
// tells the listeners the controllers registered.
type gainedBuckets struct {
	mu        sync.Mutex
	listeners []func([]sharding.Bucket)
}

// Holds: this replica audits every object (the test has no require rule).
func (g *gainedBuckets) Holds(types.UID) bool { return true }

// OnHeldGained, OnHeldLost: the buckets held do not change here.
func (g *gainedBuckets) OnHeldGained(func([]sharding.Bucket)) func() { return func() {} }

func (g *gainedBuckets) OnHeldLost(func([]sharding.Bucket)) func() { return func() {} }

func (g *gainedBuckets) OnGained(f func([]sharding.Bucket)) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listeners = append(g.listeners, f)
	return func() {}
}

func (g *gainedBuckets) all() {
	g.mu.Lock()
	defer g.mu.Unlock()
	buckets := make([]sharding.Bucket, sharding.Buckets)
	for i := range buckets {
		buckets[i] = sharding.Bucket(i)
	}
	for _, f := range g.listeners {
		f(buckets)
	}
}

// Deployments that rules write and copyFromOwner reads are cached whole on
// every replica, so no list brings them when their bucket comes: a write
// refused because another replica held the bucket is dropped, and when the
// bucket comes the controller queues the bucket's objects itself; the
// Deployment converges without any new event.
func TestWritesOfKindsCachedWholeAreQueuedWhenTheirBucketComes(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "shards-whole"
	testkit.Namespace(t, c, ns, nil)
	web := create(t, c, deployment(ns, "web", nil, nil))
	gate, gained := &heldGate{}, &gainedBuckets{}
	inst := startInstance(t, "watches:\n- kind: Pod\n  namespaces: ["+ns+"]\n- kind: Deployment\nrules:\n"+
		"- {name: tier, kinds: [Deployment], setLabels: {tier: gold}}\n"+
		"- {name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [cost-center]}}\n",
		gated(authority.Sharded, gate, gained))
	testkit.WaitFor(t, "the Deployment's write to be refused while another replica holds its bucket", testkit.Timeout, func() bool {
		return gate.refused.Load() > 0
	})
	if n := inst.writes.Load(); n != 0 {
		t.Fatalf("%d writes while another replica held every bucket, want none", n)
	}
	gate.open.Store(true)
	gained.all()
	testkit.WaitFor(t, "the Deployment to get its tier once its bucket is held", testkit.Timeout, func() bool {
		var d appsv1.Deployment
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(web), &d); err != nil {
			t.Fatal(err)
		}
		return d.Labels["tier"] == "gold"
	})
}
