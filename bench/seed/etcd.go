package seed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// EtcdCopy grows a population by copying its first namespace, as the API
// server stored it, straight into etcd: a million pods in a minute or two,
// where a create request per pod takes hours and leaves etcd two revisions
// of each (create, then status). The API server must be stopped while it
// writes and started after: it serves what etcd holds once it lists it
// again, and a running one would take a million watch events instead.
//
// The copies are the API server's own bytes (protobuf behind the "k8s\0"
// prefix), with the namespace's name and every uid replaced by ones of the
// same length, so no length prefix changes: labels, annotations, owner
// references and the managedFields of both managers are as the first
// namespace's, with uids of their own and owner references pointing at the
// copied owners.
type EtcdCopy struct {
	// Client writes to the control plane's etcd.
	Client *clientv3.Client
	// Prefix is the API server's --etcd-prefix ("/registry" by default).
	Prefix string
	// PerNamespace is the population's.
	PerNamespace int
	// Concurrency is the number of transactions in flight.
	Concurrency int
	Log         io.Writer
}

// templates are the first namespace's stored objects: the Namespace, its
// workloads, and its pods in the order of their index.
type templates struct {
	namespace stored
	workloads []stored
	pods      []stored // pods[j] is the j-th pod of the namespace
}

// stored is one object as etcd holds it, and the uids its bytes carry.
type stored struct {
	key   string
	value []byte
	uids  []string
}

// maxPutsPerTxn is etcd's default --max-txn-ops.
const maxPutsPerTxn = 128

// Grow copies pods from..to-1 (from ≥ PerNamespace: the first namespace is
// the template, created through the API) and the Namespaces and workloads
// they are the first pods of.
func (e *EtcdCopy) Grow(ctx context.Context, from, to int) error {
	if from < e.PerNamespace {
		return fmt.Errorf("the etcd copy starts after the first namespace (%d pods), not at pod %d", e.PerNamespace, from)
	}
	if last := (to - 1) / e.PerNamespace; len(NamespaceName(last)) != len(NamespaceName(0)) {
		return fmt.Errorf("%d pods need namespace %s, whose name is longer than %s's: raise --pods-per-namespace", to, NamespaceName(last), NamespaceName(0))
	}
	t, err := e.read(ctx)
	if err != nil {
		return err
	}
	var done atomic.Int64
	stop := progress(e.Log, &done, to-from)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	puts := make(chan clientv3.Op, 4*maxPutsPerTxn)
	go func() {
		defer close(puts)
		if err := e.copies(ctx, t, from, to, puts); err != nil {
			cancel(err)
		}
	}()
	var wg sync.WaitGroup
	for range e.Concurrency {
		wg.Go(func() {
			if err := e.write(ctx, puts, &done); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// copies sends the puts of pods from..to-1 and of the namespaces they begin.
func (e *EtcdCopy) copies(ctx context.Context, t *templates, from, to int, puts chan<- clientv3.Op) error {
	if len(t.pods) < min(to-from, e.PerNamespace) {
		return fmt.Errorf("the first namespace has %d pods in etcd, want %d", len(t.pods), e.PerNamespace)
	}
	var r *renamer
	for i := from; i < to; i++ {
		k, j := i/e.PerNamespace, i%e.PerNamespace
		if r == nil || r.k != k {
			r = newRenamer(k)
			if j == 0 {
				for _, s := range append([]stored{t.namespace}, t.workloads...) {
					if err := send(ctx, puts, r.put(s)); err != nil {
						return err
					}
				}
			}
		}
		if err := send(ctx, puts, r.put(t.pods[j])); err != nil {
			return err
		}
	}
	return nil
}

func send(ctx context.Context, puts chan<- clientv3.Op, op clientv3.Op) error {
	select {
	case puts <- op:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write commits puts in transactions of up to maxPutsPerTxn until there are none left.
func (e *EtcdCopy) write(ctx context.Context, puts <-chan clientv3.Op, done *atomic.Int64) error {
	batch := make([]clientv3.Op, 0, maxPutsPerTxn)
	for {
		batch = batch[:0]
		for op := range puts {
			if batch = append(batch, op); len(batch) == maxPutsPerTxn {
				break
			}
		}
		if len(batch) == 0 {
			return nil
		}
		if _, err := e.Client.Txn(ctx).Then(batch...).Commit(); err != nil {
			return fmt.Errorf("writing %d objects to etcd (%s, ...): %w", len(batch), string(batch[0].KeyBytes()), err)
		}
		done.Add(int64(countPods(batch)))
	}
}

func countPods(batch []clientv3.Op) int {
	n := 0
	for _, op := range batch {
		if bytes.Contains(op.KeyBytes(), []byte("/pods/")) {
			n++
		}
	}
	return n
}

// resources are where the API server keeps what Population creates in a
// namespace (Workloads and the pods), under its --etcd-prefix.
var resources = []string{"pods", "replicasets", "deployments", "services/specs", "configmaps"}

// read takes the first namespace's objects from etcd.
func (e *EtcdCopy) read(ctx context.Context) (*templates, error) {
	ns := NamespaceName(0)
	t := &templates{}
	kv, err := e.Client.Get(ctx, e.Prefix+"/namespaces/"+ns)
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s from etcd: %w", ns, err)
	}
	if len(kv.Kvs) == 0 {
		return nil, fmt.Errorf("namespace %s is not in etcd under %s: the etcd copy needs the first namespace created through the API", ns, e.Prefix)
	}
	if t.namespace, err = decodeStored(string(kv.Kvs[0].Key), kv.Kvs[0].Value); err != nil {
		return nil, err
	}
	pods := map[string]stored{}
	for _, resource := range resources {
		prefix := e.Prefix + "/" + resource + "/" + ns + "/"
		resp, err := e.Client.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			return nil, fmt.Errorf("reading %s of namespace %s from etcd: %w", resource, ns, err)
		}
		for _, kv := range resp.Kvs {
			s, err := decodeStored(string(kv.Key), kv.Value)
			if err != nil {
				return nil, err
			}
			if resource == "pods" {
				pods[strings.TrimPrefix(s.key, prefix)] = s
			} else {
				t.workloads = append(t.workloads, s)
			}
		}
	}
	for j := 0; j < e.PerNamespace; j++ {
		s, ok := pods[Pod(ns, j).Name]
		if !ok {
			break
		}
		t.pods = append(t.pods, s)
	}
	return t, nil
}

// storage decodes what the API server stores: protobuf behind its prefix.
var storage = serializer.NewCodecFactory(clientgoscheme.Scheme).UniversalDeserializer()

// decodeStored reads the uids of a stored object: its own and its owners'.
func decodeStored(key string, value []byte) (stored, error) {
	obj, _, err := storage.Decode(value, nil, nil)
	if err != nil {
		return stored{}, fmt.Errorf("decoding %s from etcd: %w", key, err)
	}
	m, err := metaOf(obj)
	if err != nil {
		return stored{}, fmt.Errorf("%s: %w", key, err)
	}
	s := stored{key: key, value: value, uids: []string{string(m.GetUID())}}
	for _, ref := range m.GetOwnerReferences() {
		s.uids = append(s.uids, string(ref.UID))
	}
	return s, nil
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("a %T has no object metadata", obj)
	}
	return m, nil
}

// renamer makes namespace k's copy of a stored object.
type renamer struct {
	k         int
	namespace []byte
	uids      map[string][]byte
}

func newRenamer(k int) *renamer {
	return &renamer{k: k, namespace: []byte(NamespaceName(k)), uids: map[string][]byte{}}
}

// put is the copy of s in namespace k: the namespace's name and every uid
// replaced, each by a string of the same length.
func (r *renamer) put(s stored) clientv3.Op {
	from := []byte(NamespaceName(0))
	value := bytes.ReplaceAll(s.value, from, r.namespace)
	for _, uid := range s.uids {
		value = bytes.ReplaceAll(value, []byte(uid), r.uid(uid))
	}
	return clientv3.OpPut(strings.Replace(s.key, NamespaceName(0), string(r.namespace), 1), string(value))
}

// uid is namespace k's uid for the first namespace's uid: derived, so an
// owner and the pods that name it get the same one.
func (r *renamer) uid(template string) []byte {
	if u, ok := r.uids[template]; ok {
		return u
	}
	u := []byte(uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "%s/%d", template, r.k)).String())
	r.uids[template] = u
	return u
}

// WaitServed waits until the API server lists want pods, or fails after timeout.
func WaitServed(ctx context.Context, count func(context.Context) (int, error), want int, timeout time.Duration, log io.Writer) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := count(ctx)
		if err == nil && got == want {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("the API server does not list the pods written to etcd after %s: %w", timeout, err)
			}
			return fmt.Errorf("the API server lists %d pods after %s, want the %d written", got, timeout, want)
		}
		fmt.Fprintf(log, "seed: waiting for the API server to serve %d pods (%d, %v)\n", want, got, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}
