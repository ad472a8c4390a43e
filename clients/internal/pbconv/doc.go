// Package pbconv converts Kubernetes autoscaling/v2 types (k8s.io/api) to the API messages of
// recommender.v1, field for field, for the clients that read HorizontalPodAutoscaler manifests
// (hpactl, hpa-scaler). Quantities are written in canonical form (Quantity.String).
//
// It imports the generated API and k8s.io/api only.
package pbconv
