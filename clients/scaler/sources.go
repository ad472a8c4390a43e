package scaler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/hpa-recommender/hpa-recommender/clients/scaler/api/v1alpha1"
)

// objectSet is the autoscalers one object source (hpa or custom) has seen through its
// informers, one per watched namespace. Once every informer has synced, the whole set is
// published to the Scaler, and from then on each change publishes the one object it changed.
type objectSet struct {
	s      *Scaler
	src    string
	mu     sync.Mutex
	objs   map[string]*Autoscaler
	synced bool
	// bad are the objects that could not be converted, by key, with the error last reported.
	bad map[string]string
}

// startObjectSource starts the informers of src (SourceHPA or SourceCustom) over
// Config.Namespaces and Config.Selector; they stop when ctx ends. The set is published once
// every informer has synced (Run's readiness waits for it).
func (s *Scaler) startObjectSource(ctx context.Context, wg *sync.WaitGroup, src string) error {
	set := newObjectSet(s, src)
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = s.cfg.Selector }
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    set.upsert,
		UpdateFunc: func(_, obj any) { set.upsert(obj) },
		DeleteFunc: set.remove,
	}
	var synced []cache.InformerSynced
	for _, ns := range s.cfg.namespaceList() {
		switch src {
		case SourceHPA:
			if s.kube.Client == nil {
				return errors.New("scaler: the hpa source needs Kube.Client")
			}
			f := informers.NewSharedInformerFactoryWithOptions(s.kube.Client, 0, informers.WithNamespace(ns), informers.WithTweakListOptions(tweak))
			inf := f.Autoscaling().V2().HorizontalPodAutoscalers().Informer()
			if _, err := inf.AddEventHandler(handler); err != nil {
				return err
			}
			synced = append(synced, inf.HasSynced)
			f.Start(ctx.Done())
			wg.Add(1)
			go func() { defer wg.Done(); <-ctx.Done(); f.Shutdown() }()
		case SourceCustom:
			if s.kube.Dynamic == nil {
				return errors.New("scaler: the custom source needs Kube.Dynamic")
			}
			f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.kube.Dynamic, 0, ns, tweak)
			inf := f.ForResource(v1alpha1.GroupVersionResource).Informer()
			if _, err := inf.AddEventHandler(handler); err != nil {
				return err
			}
			synced = append(synced, inf.HasSynced)
			f.Start(ctx.Done())
			wg.Add(1)
			go func() { defer wg.Done(); <-ctx.Done(); f.Shutdown() }()
		default:
			return fmt.Errorf("scaler: unknown source %q", src)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			return
		}
		set.publishAll()
		s.log.Info("watching autoscaler objects", "source", src, "namespaces", s.cfg.namespaceList(), "selector", s.cfg.Selector)
	}()
	return nil
}

func newObjectSet(s *Scaler, src string) *objectSet {
	return &objectSet{s: s, src: src, objs: map[string]*Autoscaler{}, bad: map[string]string{}}
}

// convert is the Autoscaler of an informer object.
func (o *objectSet) convert(obj any) (*Autoscaler, error) {
	switch v := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		return hpaAutoscaler(v), nil
	case *unstructured.Unstructured:
		return customAutoscaler(v)
	}
	return nil, fmt.Errorf("unexpected object %T", obj)
}

func objectKey(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key
	}
	k, _ := cache.MetaNamespaceKeyFunc(obj)
	return k
}

func (o *objectSet) upsert(obj any) {
	key := objectKey(obj)
	a, err := o.convert(obj)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		// Not loaded; said once per distinct error, on the object, and the others go on.
		delete(o.objs, key)
		if o.bad[key] != err.Error() {
			o.bad[key] = err.Error()
			o.s.log.Error("autoscaler object not loaded", "source", o.src, "autoscaler", key, "error", err)
			if u, ok := obj.(*unstructured.Unstructured); ok && o.s.kube.Events != nil {
				ref := &corev1.ObjectReference{APIVersion: customAPIVersion, Kind: v1alpha1.Kind, Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID()}
				o.s.kube.Events.Event(ref, corev1.EventTypeWarning, ReasonInvalidSpec, err.Error())
			}
		}
	} else {
		delete(o.bad, key)
		o.objs[key] = a
	}
	o.publishLocked(key)
}

func (o *objectSet) remove(obj any) {
	key := objectKey(obj)
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.objs, key)
	delete(o.bad, key)
	o.publishLocked(key)
}

// publishAll marks the set synced and publishes all of it, sorted by key (so that names
// another source already has are logged in order).
func (o *objectSet) publishAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.synced = true
	out := slices.Collect(maps.Values(o.objs))
	slices.SortFunc(out, func(a, b *Autoscaler) int { return strings.Compare(a.Key(), b.Key()) })
	o.s.setSource(o.src, out)
}

// publishLocked publishes the change of key, once the set is synced (publishAll publishes what
// came before).
func (o *objectSet) publishLocked(key string) {
	if o.synced {
		o.s.setObject(o.src, key, o.objs[key]) // nil: gone
	}
}
