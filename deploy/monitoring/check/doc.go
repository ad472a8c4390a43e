// Package check tests deploy/monitoring: every alerting rule of rules.yaml and every query of
// dashboard.json parses with Prometheus's own rule and PromQL parsers, prometheusrule.yaml is
// rules.yaml as a PrometheusRule object, and metrics.txt lists exactly the metric names they
// use (go test -update rewrites the two generated files).
//
// It is a module of its own because github.com/prometheus/prometheus would add dozens of
// modules to the service's go.mod for a test. That the names of metrics.txt are ones the
// binaries export is checked where the binaries are: hpa-recommender's tests scrape the running
// service (cmd/hpa-recommender, TestMonitoringMetricsAreExported), and hpa-scaler's e2e test
// scrapes the running scaler against a real control plane (cmd/hpa-scaler), since the scaler
// serves /metrics only once it has reached an API server.
package check
