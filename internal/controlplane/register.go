package controlplane

import (
	"context"
	stdbase64 "encoding/base64"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Route is how the Service behind the APIServices reaches the loopback adapter.
type Route int

const (
	// RouteExternalName: a Service of type ExternalName whose externalName is
	// Registration.ExternalName (default "localhost"). kube-apiserver, with
	// --enable-aggregator-routing=false (the default), proxies to
	// https://<externalName>:<APIService port>, i.e. the adapter on loopback. This works.
	RouteExternalName Route = iota
	// RouteEndpoints: a selector-less ClusterIP Service plus a hand-made EndpointSlice
	// holding Registration.Address (default 127.0.0.1; a name such as "localhost" makes an
	// FQDN slice), for kube-apiserver --enable-aggregator-routing=true, which proxies to
	// the first ready endpoint's address. EndpointSlice validation refuses loopback IPs.
	RouteEndpoints
)

// Registration places the adapter behind APIService objects.
type Registration struct {
	ServiceNamespace, ServiceName string
	Route                         Route
	ExternalName                  string // RouteExternalName; default "localhost"
	Address                       string // RouteEndpoints; default "127.0.0.1"
	// GroupVersions to register; default all three the adapter serves.
	GroupVersions []schema.GroupVersion
	// NoWait returns without waiting for the APIServices' Available condition.
	NoWait bool
}

// DefaultRegistration is what StartMetricsAdapter uses: kube-system/kubetest-metrics as
// an ExternalName service for localhost, all three APIs.
var DefaultRegistration = Registration{ServiceNamespace: "kube-system", ServiceName: "kubetest-metrics", Route: RouteExternalName}

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// APIServiceName is the APIService object name for gv ("v1beta2.custom.metrics.k8s.io").
func APIServiceName(gv schema.GroupVersion) string { return gv.Version + "." + gv.Group }

// Register creates (or replaces) the Service and one APIService per group version
// (caBundle: the adapter's CA, service port: the adapter's port) through cfg, then waits
// until every APIService is Available, i.e. kube-apiserver reached the adapter's discovery
// document through the service.
func (a *MetricsAdapter) Register(ctx context.Context, cp *ControlPlane, reg Registration) error {
	return a.RegisterWith(ctx, cp.Config, reg)
}

// RegisterWith is Register with any admin config.
func (a *MetricsAdapter) RegisterWith(ctx context.Context, cfg *rest.Config, reg Registration) error {
	return registerAPIServices(ctx, cfg, a.Port, a.CAPEM, reg)
}

// registerAPIServices places the server on 127.0.0.1:port, whose serving certificate caPEM
// signed, behind reg's Service and APIServices (see Register).
func registerAPIServices(ctx context.Context, cfg *rest.Config, port int, caPEM []byte, reg Registration) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if reg.ServiceNamespace == "" {
		reg.ServiceNamespace = DefaultRegistration.ServiceNamespace
	}
	if reg.ServiceName == "" {
		reg.ServiceName = DefaultRegistration.ServiceName
	}
	if len(reg.GroupVersions) == 0 {
		reg.GroupVersions = []schema.GroupVersion{CustomMetricsGV, ExternalMetricsGV, ResourceMetricsGV}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: reg.ServiceName, Namespace: reg.ServiceNamespace}}
	switch reg.Route {
	case RouteExternalName:
		svc.Spec.Type = corev1.ServiceTypeExternalName
		svc.Spec.ExternalName = reg.ExternalName
		if svc.Spec.ExternalName == "" {
			svc.Spec.ExternalName = "localhost"
		}
	case RouteEndpoints:
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		svc.Spec.Ports = []corev1.ServicePort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}}
	}
	services := cs.CoreV1().Services(reg.ServiceNamespace)
	if err := services.Delete(ctx, reg.ServiceName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if _, err := services.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("controlplane: create service %s/%s: %w", reg.ServiceNamespace, reg.ServiceName, err)
	}
	if reg.Route == RouteEndpoints {
		addr := reg.Address
		if addr == "" {
			addr = "127.0.0.1"
		}
		port, proto, name, ready := int32(port), corev1.ProtocolTCP, "https", true
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: reg.ServiceName, Namespace: reg.ServiceNamespace,
				Labels: map[string]string{discoveryv1.LabelServiceName: reg.ServiceName, discoveryv1.LabelManagedBy: "kubetest"}},
			AddressType: addressType(addr),
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
		}
		if _, err := cs.DiscoveryV1().EndpointSlices(reg.ServiceNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("controlplane: create EndpointSlice with %s: %w", addr, err)
		}
	}
	for _, gv := range reg.GroupVersions {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1",
			"kind":       "APIService",
			"metadata":   map[string]any{"name": APIServiceName(gv)},
			"spec": map[string]any{
				"group":                gv.Group,
				"version":              gv.Version,
				"groupPriorityMinimum": int64(100),
				"versionPriority":      int64(100),
				"caBundle":             base64(caPEM),
				"service": map[string]any{
					"namespace": reg.ServiceNamespace,
					"name":      reg.ServiceName,
					"port":      int64(port),
				},
			},
		}}
		apis := dyn.Resource(apiServiceGVR)
		if err := apis.Delete(ctx, APIServiceName(gv), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if _, err := apis.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("controlplane: create APIService %s: %w", APIServiceName(gv), err)
		}
	}
	if reg.NoWait {
		return nil
	}
	for _, gv := range reg.GroupVersions {
		if err := WaitAPIServiceAvailable(ctx, cfg, APIServiceName(gv)); err != nil {
			return err
		}
	}
	return nil
}

// WaitAPIServiceAvailable polls the APIService until its Available condition is True; the
// error carries the last condition's reason and message.
func WaitAPIServiceAvailable(ctx context.Context, cfg *rest.Config, name string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	last := "no Available condition yet"
	for {
		obj, err := dyn.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] != "Available" {
					continue
				}
				if m["status"] == "True" {
					return nil
				}
				last = fmt.Sprintf("Available=%v %v: %v", m["status"], m["reason"], m["message"])
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlplane: APIService %s not available: %s (%w)", name, strings.TrimSpace(last), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func base64(b []byte) string { return stdbase64.StdEncoding.EncodeToString(b) }

func addressType(addr string) discoveryv1.AddressType {
	switch ip := net.ParseIP(addr); {
	case ip == nil:
		return discoveryv1.AddressTypeFQDN
	case ip.To4() != nil:
		return discoveryv1.AddressTypeIPv4
	default:
		return discoveryv1.AddressTypeIPv6
	}
}
