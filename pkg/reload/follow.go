package reload

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metrics"
)

// follow watches the one selectors ConfigMap (a list/watch with a
// metadata.name field selector, so RBAC can grant it by name) and applies each
// change; changes that arrive during a reload collapse into the latest.
func (r *Reloader) follow(ctx context.Context) error {
	key, _ := r.Source.configMapKey() // checked by Validate
	clientset, err := kubernetes.NewForConfig(r.Config)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(key.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + key.Name }))
	informer := factory.Core().V1().ConfigMaps().Informer()
	changed := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }, DeleteFunc: notify,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return ctx.Err()
	}
	notify(nil) // the state at start, even if it is "no ConfigMap"
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			r.sync(ctx, informer.GetStore(), key.String())
		}
	}
}

// sync applies the ConfigMap as it is now.
func (r *Reloader) sync(ctx context.Context, store toolscache.Store, key string) {
	item, exists, err := store.GetByKey(key)
	if err != nil || !exists {
		r.configMapGone()
		return
	}
	cm := item.(*corev1.ConfigMap)
	conf, err := parseConfigMap(cm)
	if err != nil {
		r.reject(cm, err)
		return
	}
	if g := r.running(); g != nil {
		if hash, _ := config.Hash(conf); hash == g.hash {
			metrics.ConfigLastReloadSuccessful.Set(1) // e.g. a bad edit reverted
			return
		}
	}
	if err := r.apply(ctx, conf); err != nil {
		r.reject(cm, err)
		return
	}
	g := r.running()
	r.Recorder.Eventf(cm, nil, corev1.EventTypeNormal, ReasonReloaded, "Reload", "generation %d running (%d watches)", g.number, len(g.watches))
	for _, f := range g.forbidden {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonForbidden, "Reload", "%s", truncate(f.Err.Error(), 1000))
	}
}

func (r *Reloader) configMapGone() {
	metrics.ConfigLastReloadSuccessful.Set(0)
	if g := r.running(); g != nil {
		r.Log.Info("warning: the selectors ConfigMap is gone; generation keeps running with the last good configuration",
			"configMap", r.Source.ConfigMap, "generation", g.number)
		return
	}
	r.Log.Info("waiting for the selectors ConfigMap", "configMap", r.Source.ConfigMap)
}
