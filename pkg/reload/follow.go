package reload

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/config"
)

// version is one state of the selectors ConfigMap: gone (cm nil), invalid
// (err), or a valid configuration (conf, hash).
type version struct {
	cm   *corev1.ConfigMap
	conf *config.Config
	hash string
	err  error
}

// follower watches the one selectors ConfigMap (a list/watch with a
// metadata.name field selector, so RBAC can grant it by name) on every
// replica from process start, leader or not. A standby that wins the Lease
// hours later thus acts on the ConfigMap as it is then, and, should that be
// invalid, on the newest valid version it saw: never on the version it read
// at its own start-up, which would release every key rules added since.
type follower struct {
	config *rest.Config
	key    types.NamespacedName

	changed chan struct{} // one pending notification: changes collapse into the latest
	synced  chan struct{} // closed once the informer has synced

	mu        sync.Mutex
	store     toolscache.Store
	lastValid *version
}

func newFollower(cfg *rest.Config, key types.NamespacedName) *follower {
	return &follower{config: cfg, key: key, changed: make(chan struct{}, 1), synced: make(chan struct{})}
}

// NeedLeaderElection: every replica follows, so that a new leader knows the newest version.
func (f *follower) NeedLeaderElection() bool { return false }

// Start runs the informer until ctx ends.
func (f *follower) Start(ctx context.Context) error {
	clientset, err := kubernetes.NewForConfig(f.config)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(f.key.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + f.key.Name }))
	informer := factory.Core().V1().ConfigMaps().Informer()
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: f.observe, UpdateFunc: func(_, o any) { f.observe(o) }, DeleteFunc: f.observe,
	}); err != nil {
		return err
	}
	f.mu.Lock()
	f.store = informer.GetStore()
	f.mu.Unlock()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil // ctx ended
	}
	f.observe(nil) // the state at start, even if it is "no ConfigMap"
	close(f.synced)
	<-ctx.Done()
	return nil
}

// observe records the newest valid version and tells the Reloader.
func (f *follower) observe(any) {
	if v := f.current(); v.conf != nil {
		f.mu.Lock()
		f.lastValid = &v
		f.mu.Unlock()
	}
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// current parses the ConfigMap as it is now.
func (f *follower) current() version {
	f.mu.Lock()
	store := f.store
	f.mu.Unlock()
	item, exists, err := store.GetByKey(f.key.String())
	if err != nil || !exists {
		return version{}
	}
	v := version{cm: item.(*corev1.ConfigMap)}
	if v.conf, v.err = parseConfigMap(v.cm); v.err == nil {
		v.hash, _ = config.Hash(v.conf)
	}
	return v
}

// newestValid is the newest valid version seen, or nil.
func (f *follower) newestValid() *version {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastValid
}
