package scaler

import (
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// Modes label what decided: the service, the service in shadow (dry-run) mode, the local
// fallback, or the local fallback in shadow mode.
const (
	modeService        = "service"
	modeShadow         = "shadow"
	modeFallback       = "fallback"
	modeFallbackShadow = "fallback_shadow"
)

// telemetry are the scaler's Prometheus metrics, on a registry of their own.
type telemetry struct {
	syncs            *prometheus.CounterVec // result
	syncDuration     prometheus.Histogram   //
	decisions        *prometheus.CounterVec // mode, direction
	scaleWrites      *prometheus.CounterVec // mode, result
	metricErrors     *prometheus.CounterVec // type
	serviceErrors    *prometheus.CounterVec // code
	reports          *prometheus.CounterVec // result
	reportsPending   prometheus.Gauge       //
	fallbackTargets  prometheus.Gauge       //
	serviceReachable prometheus.Gauge       //
	autoscalers      prometheus.Gauge       //
	manifestErrors   prometheus.Gauge       //
	leader           prometheus.Gauge       //
	desired          *prometheus.GaugeVec   // namespace, autoscaler, mode
	current          *prometheus.GaugeVec   // namespace, autoscaler
	lastSync         *prometheus.GaugeVec   // namespace, autoscaler
	statusWrites     *prometheus.CounterVec // result
	// shadowComparisons and shadowDisagreement compare shadow decisions with the in-tree
	// controller's (shadow.go).
	shadowComparisons  *prometheus.CounterVec // result
	shadowDisagreement *prometheus.GaugeVec   // namespace, name
}

func newTelemetry(reg prometheus.Registerer) *telemetry {
	t := &telemetry{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hpa_scaler_syncs_total", Help: "Target syncs by result (ok, error).",
		}, []string{"result"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hpa_scaler_sync_duration_seconds", Help: "Duration of one target sync.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hpa_scaler_decisions_total", Help: "Decisions by mode (service, shadow, fallback, fallback_shadow) and direction (up, down, none).",
		}, []string{"mode", "direction"}),
		scaleWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hpa_scaler_scale_writes_total", Help: "Scale subresource writes by mode and result (success, failure, changed: another writer changed the replicas first, suppressed: a local scale-down not applied).",
		}, []string{"mode", "result"}),
		metricErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hpa_scaler_metric_fetch_errors_total", Help: "Metrics that could not be fetched, by metric type.",
		}, []string{"type"}),
		serviceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hpa_scaler_service_errors_total", Help: "Failed calls to the hpa-recommender service, by gRPC code.",
		}, []string{"code"}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hpa_scaler_reports_total", Help: "ReportScale calls by result (recorded, duplicate, error).",
		}, []string{"result"}),
		reportsPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hpa_scaler_reports_pending", Help: "Scale outcomes not yet acknowledged by the service.",
		}),
		fallbackTargets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hpa_scaler_fallback_targets", Help: "Targets currently decided locally because the service is unreachable.",
		}),
		serviceReachable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hpa_scaler_service_reachable", Help: "1 when the last call to the service got an answer, else 0.",
		}),
		autoscalers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hpa_scaler_autoscalers", Help: "Autoscalers loaded from the manifests directory.",
		}),
		manifestErrors: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hpa_scaler_manifest_errors", Help: "1 when the last load of the manifests directory reported errors, else 0.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hpa_scaler_leader", Help: "1 while this replica is the leader and syncs, else 0.",
		}),
		desired: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hpa_scaler_desired_replicas", Help: "The last decided replica count, by autoscaler and mode.",
		}, []string{"namespace", "autoscaler", "mode"}),
		current: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hpa_scaler_current_replicas", Help: "The target's spec.replicas at the last sync, by autoscaler.",
		}, []string{"namespace", "autoscaler"}),
		lastSync: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hpa_scaler_last_sync_timestamp_seconds", Help: "When the autoscaler was last synced without error.",
		}, []string{"namespace", "autoscaler"}),
	}
	t.statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hpa_scaler_status_writes_total", Help: "Status subresource writes of autoscaler objects by result (written, unchanged: skipped since nothing changed, error).",
	}, []string{"result"})
	reg.MustRegister(t.statusWrites)
	t.shadowComparisons = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hpa_scaler_shadow_comparisons_total", Help: "Shadow decisions of HPAs the in-tree controller writes, compared with its status.desiredReplicas, by result (agree, disagree, not_comparable: the inputs of the two decisions may differ).",
	}, []string{"result"})
	t.shadowDisagreement = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hpa_scaler_shadow_disagreement", Help: "The service's replica count minus the in-tree controller's at the HPA's last comparable shadow decision (0: they agreed).",
	}, []string{"namespace", "name"})
	reg.MustRegister(t.shadowComparisons, t.shadowDisagreement)
	for _, r := range []string{shadowAgree, shadowDisagree, shadowNotComparable} {
		t.shadowComparisons.WithLabelValues(r)
	}
	reg.MustRegister(t.syncs, t.syncDuration, t.decisions, t.scaleWrites, t.metricErrors, t.serviceErrors, t.reports,
		t.reportsPending, t.fallbackTargets, t.serviceReachable, t.autoscalers, t.manifestErrors, t.leader,
		t.desired, t.current, t.lastSync)
	t.initialize()
	return t
}

// initialize creates the series of every label value known in advance, at zero: a vector
// without children is absent from /metrics, so an alert on its rate() could not tell "none
// yet" from a renamed metric, and the first increment would be lost to rate() (it needs two
// samples). The per-autoscaler gauges appear with their autoscaler.
func (t *telemetry) initialize() {
	for _, r := range []string{"ok", "error"} {
		t.syncs.WithLabelValues(r)
	}
	for _, m := range []string{modeService, modeShadow, modeFallback, modeFallbackShadow} {
		for _, d := range []string{"up", "down", "none"} {
			t.decisions.WithLabelValues(m, d)
		}
	}
	for _, m := range []string{modeService, modeFallback, modePaused, modeMetricsFallback} {
		for _, r := range []string{"success", "failure", "changed"} {
			t.scaleWrites.WithLabelValues(m, r)
		}
	}
	t.scaleWrites.WithLabelValues(modeFallback, "suppressed")
	for _, typ := range []string{recommender.MetricResource, recommender.MetricContainerResource, recommender.MetricPods,
		recommender.MetricObject, recommender.MetricExternal} {
		t.metricErrors.WithLabelValues(typ)
	}
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		t.serviceErrors.WithLabelValues(c.String())
	}
	for _, r := range []string{"recorded", "duplicate", "rejected", "error"} {
		t.reports.WithLabelValues(r)
	}
	for _, r := range []string{"written", "unchanged", "error"} {
		t.statusWrites.WithLabelValues(r)
	}
}

// forget drops an autoscaler's series when it leaves the manifests.
func (t *telemetry) forget(namespace, name string) {
	t.desired.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "autoscaler": name})
	t.current.DeleteLabelValues(namespace, name)
	t.lastSync.DeleteLabelValues(namespace, name)
	t.shadowDisagreement.DeleteLabelValues(namespace, name)
}

func direction(cur, desired int32) string {
	switch {
	case desired > cur:
		return "up"
	case desired < cur:
		return "down"
	default:
		return "none"
	}
}
