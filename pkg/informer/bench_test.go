package informer_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/informer"
)

// BenchmarkRelist relists 100k objects through client-go's informer and the
// streaming one, each storing them as markedPods (as metawatch stores packed
// ones), and reports the bytes allocated per relist and the peak, during it,
// of the live heap (runtime/metrics, at each GC) above the steady state.
// Relists wait for the informers' backoff (0.8 to 1.6 s): run it with
// -benchtime 3x.
func BenchmarkRelist(b *testing.B) {
	const n = 100_000
	for _, name := range []string{stock, me} {
		b.Run(name, func(b *testing.B) {
			lw := &synthetic{n: n}
			var updates atomic.Int64
			handler := toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { updates.Add(1) }}
			var inf toolscache.SharedIndexInformer
			if name == stock {
				inf = toolscache.NewSharedIndexInformer(lw, newPod(), 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
			} else {
				inf = informer.New(lw, newPod(), 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}, informer.Options{})
			}
			_ = inf.SetTransform(func(obj any) (any, error) {
				if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
					return &markedPod{PartialObjectMetadata: *p}, nil
				}
				return obj, nil
			})
			_, _ = inf.AddEventHandler(handler)
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			go inf.RunWithContext(ctx)
			for !inf.HasSynced() {
				time.Sleep(10 * time.Millisecond)
			}
			goruntime.GC() // the live heap of the synced store, not of a GC during the sync
			steady := liveHeap()
			peak := newPeak()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				want := int64(i+1) * n
				lw.expire()
				for updates.Load() < want {
					time.Sleep(time.Millisecond)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(peak.stop()-steady)/(1<<20), "peak-live-MiB-over-steady")
			b.ReportMetric(float64(steady)/(1<<20), "steady-live-MiB")
		})
	}
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peak samples the live heap every millisecond until stopped.
type peak struct {
	done chan struct{}
	max  atomic.Uint64
	wg   sync.WaitGroup
}

func newPeak() *peak {
	p := &peak{done: make(chan struct{})}
	p.wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				if v := liveHeap(); v > p.max.Load() {
					p.max.Store(v)
				}
			}
		}
	})
	return p
}

func (p *peak) stop() uint64 {
	close(p.done)
	p.wg.Wait()
	return p.max.Load()
}

// synthetic serves n pods by watch-list, each made as the event is sent (as
// a decoder makes it), then keeps the watch open until expire ends it with a
// 410: the server side costs the benchmark nothing per object.
type synthetic struct {
	n       int
	mu      sync.Mutex
	current chan struct{}
}

func (s *synthetic) List(metav1.ListOptions) (runtime.Object, error) {
	return nil, fmt.Errorf("synthetic: lists only by watch-list")
}

func (s *synthetic) Watch(o metav1.ListOptions) (watch.Interface, error) {
	out, stop, expired := make(chan watch.Event), make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.current = expired
	s.mu.Unlock()
	initial := o.SendInitialEvents != nil && *o.SendInitialEvents
	go func() {
		defer close(out)
		send := func(ev watch.Event) bool {
			select {
			case out <- ev:
				return true
			case <-stop:
				return false
			}
		}
		for i := 0; initial && i < s.n; i++ {
			if !send(watch.Event{Type: watch.Added, Object: syntheticPod(i)}) {
				return
			}
		}
		if initial {
			end := newPod()
			end.ResourceVersion, end.Annotations = strconv.Itoa(s.n), map[string]string{metav1.InitialEventsAnnotationKey: "true"}
			if !send(watch.Event{Type: watch.Bookmark, Object: end}) {
				return
			}
		}
		select {
		case <-expired:
			st := apierrors.NewResourceExpired("too old resource version").ErrStatus
			send(watch.Event{Type: watch.Error, Object: &st})
		case <-stop:
		}
	}()
	var once sync.Once
	return watchFuncs{out: out, stop: func() { once.Do(func() { close(stop) }) }}, nil
}

func (s *synthetic) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.current)
}

func syntheticPod(i int) *metav1.PartialObjectMetadata {
	p := newPod()
	p.Namespace, p.Name = fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("pod-%06d", i)
	p.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
	p.ResourceVersion = strconv.Itoa(i + 1)
	p.Labels = map[string]string{"app": "web", "shard": strconv.Itoa(i % 100)}
	return p
}
