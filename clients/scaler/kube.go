package scaler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	metricsclientset "k8s.io/metrics/pkg/client/clientset/versioned"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
)

// Kube is everything the scaler reads and writes in the cluster. Tests fill it with client-go
// fakes; NewKube builds it from a rest.Config.
type Kube struct {
	// Scales reads and writes the scale subresource of any kind that has one.
	Scales scale.ScalesGetter
	// Mapper maps a scaleTargetRef's group and kind to resources. When it also has Reset()
	// (a deferred discovery mapper does), it is reset after a failed mapping so new kinds
	// (a CRD installed later) are found, at most once per mapperResetInterval.
	Mapper meta.RESTMapper
	// Pods lists pods from an informer cache.
	Pods corelisters.PodLister
	// ResourceMetrics, CustomMetrics and ExternalMetrics are the metrics APIs; a nil one makes
	// every metric of its kind an error observation.
	ResourceMetrics resourceclient.PodMetricsesGetter
	CustomMetrics   customclient.CustomMetricsClient
	ExternalMetrics externalclient.ExternalMetricsClient
	// Prometheus answers the queries of the prometheus-query annotations (prometheus.go);
	// nil makes every such metric an error observation. PrometheusTimeout bounds one query
	// (default DefaultPrometheusTimeout).
	Prometheus        PrometheusAPI
	PrometheusTimeout time.Duration
	// Events records Kubernetes events on scale targets and autoscaler objects.
	Events record.EventRecorder
	// Client reads HorizontalPodAutoscaler objects and writes their status (the hpa source);
	// Dynamic does the same for the custom resource (the custom source). Either may be nil
	// when its source is not used.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface

	resetMu   sync.Mutex
	lastReset time.Time
}

const mapperResetInterval = 30 * time.Second

// errScaleChanged says another writer changed spec.replicas between the decision and the
// write: the decision is not applied; the next sync decides from the new count.
var errScaleChanged = errors.New("the target's replicas changed since the decision")

// getScale reads the scale subresource of ref in namespace, trying every REST mapping of its
// group and kind as upstream does.
func (k *Kube) getScale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupResource, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, fmt.Errorf("invalid API version in scale target reference: %w", err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	mappings, err := k.Mapper.RESTMappings(gk)
	if err != nil {
		k.maybeResetMapper()
		return nil, schema.GroupResource{}, fmt.Errorf("unable to determine resource for scale target reference: %w", err)
	}
	var firstErr error
	for i, m := range mappings {
		gr := m.Resource.GroupResource()
		sc, err := k.Scales.Scales(namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return sc, gr, nil
		}
		if i == 0 {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("unrecognized resource %s", gk)
	}
	return nil, schema.GroupResource{}, firstErr
}

func (k *Kube) maybeResetMapper() {
	r, ok := k.Mapper.(interface{ Reset() })
	if !ok {
		return
	}
	k.resetMu.Lock()
	defer k.resetMu.Unlock()
	if time.Since(k.lastReset) < mapperResetInterval {
		return
	}
	k.lastReset = time.Now()
	r.Reset()
}

// updateScale writes desired into the scale read as sc, with sc's resourceVersion as the
// precondition. On a conflict it re-reads: while spec.replicas is still the count the decision
// was made from (from), it retries with the new resourceVersion (upstream's
// retry.DefaultRetry: 5 attempts); when another writer changed spec.replicas it stops with
// errScaleChanged, so one decision is never applied over someone else's change.
func (k *Kube) updateScale(ctx context.Context, gr schema.GroupResource, sc *autoscalingv1.Scale, from, desired int32) error {
	const attempts = 5
	cur := sc.DeepCopy()
	var err error
	for i := 0; i < attempts; i++ {
		cur.Spec.Replicas = desired
		_, err = k.Scales.Scales(cur.Namespace).Update(ctx, gr, cur, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if !isConflict(err) {
			return err
		}
		latest, gerr := k.Scales.Scales(cur.Namespace).Get(ctx, gr, cur.Name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("%w (re-reading the scale failed: %v)", err, gerr)
		}
		if latest.Spec.Replicas != from {
			return fmt.Errorf("%w: spec.replicas is %d, the decision was made at %d", errScaleChanged, latest.Spec.Replicas, from)
		}
		cur = latest
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return err
}

// NewKube builds the clients of a cluster from cfg: the scale client over a deferred
// discovery REST mapper, a pod informer over every namespace (its objects trimmed to what the
// decision reads), the three metrics APIs and an event recorder. Call Start before use.
func NewKube(cfg *rest.Config, component string) (*Kube, *KubeRunner, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery client: %w", err)
	}
	cached := cacheddiscovery.NewMemCacheClient(disc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
	if err != nil {
		return nil, nil, fmt.Errorf("scale client: %w", err)
	}
	mc, err := metricsclientset.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("resource metrics client: %w", err)
	}
	ext, err := externalclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("external metrics client: %w", err)
	}
	apis := customclient.NewAvailableAPIsGetter(disc)
	custom := customclient.NewForConfig(cfg, mapper, apis)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamic client: %w", err)
	}

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(trimPod))
	podInformer := factory.Core().V1().Pods()
	// Register the informer before Start.
	inf := podInformer.Informer()

	broadcaster := record.NewBroadcaster()
	recorder := broadcaster.NewRecorder(eventScheme(), corev1.EventSource{Component: component})

	k := &Kube{
		Scales:          scales,
		Mapper:          mapper,
		Pods:            podInformer.Lister(),
		ResourceMetrics: mc.MetricsV1beta1(),
		CustomMetrics:   custom,
		ExternalMetrics: ext,
		Events:          recorder,
		Client:          cs,
		Dynamic:         dyn,
	}
	run := &KubeRunner{
		Client: cs,
		start: func(ctx context.Context) {
			broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
			factory.Start(ctx.Done())
			go customclient.PeriodicallyInvalidate(apis, 5*time.Minute, ctx.Done())
			go func() {
				<-ctx.Done()
				factory.Shutdown()
				broadcaster.Shutdown()
			}()
		},
		synced: inf.HasSynced,
	}
	return k, run, nil
}

// KubeRunner starts what NewKube built and reports when its caches are ready.
type KubeRunner struct {
	// Client is the typed clientset (leader election uses it for its Lease).
	Client kubernetes.Interface
	start  func(context.Context)
	synced func() bool
}

// Start starts the informers and the event sink until ctx ends and waits for the pod cache.
func (r *KubeRunner) Start(ctx context.Context) error {
	r.start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), r.synced) {
		return errors.New("pod informer cache did not sync")
	}
	return nil
}

// Synced reports whether the pod cache has synced.
func (r *KubeRunner) Synced() bool { return r.synced() }

// trimPod keeps only what the decision reads of a pod, so a cache of many pods stays small.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Annotations = nil
	p.OwnerReferences = nil
	p.Spec.Volumes = nil
	p.Spec.Containers = trimContainers(p.Spec.Containers)
	p.Spec.InitContainers = trimContainers(p.Spec.InitContainers)
	p.Spec.EphemeralContainers = nil
	p.Status.ContainerStatuses = nil
	p.Status.InitContainerStatuses = nil
	p.Status.EphemeralContainerStatuses = nil
	return p, nil
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return cs
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i] = corev1.Container{Name: cs[i].Name, Resources: cs[i].Resources, RestartPolicy: cs[i].RestartPolicy}
	}
	return out
}
