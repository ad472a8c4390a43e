// Package hpafile reads HorizontalPodAutoscaler manifests the way kubectl reads a file: several
// YAML (or JSON) documents per file, `kind: List` documents, documents of other kinds skipped,
// autoscaling/v2 as written, and autoscaling/v2beta2, autoscaling/v2beta1 and autoscaling/v1
// converted to autoscaling/v2 as the Kubernetes API server converts (or, for the betas it no
// longer serves, converted) them, each beta document with a warning (HPA.Warnings). The
// conversions are hand-written because the API server's live in k8s.io/kubernetes, not a
// library. Decoding is strict and case-sensitive, as the API server's strict field
// validation is, in the version the document declares: every unknown or duplicate field, every type mismatch it can see and every
// missing name is reported at once, each with its file, document and field path. It is the one
// loader of hpactl (-f) and the scaler (--manifests-dir).
//
// It imports the generated API, clients/internal/pbconv and Kubernetes' API types only.
package hpafile
