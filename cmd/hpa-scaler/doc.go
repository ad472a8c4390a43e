// Command hpa-scaler is the in-cluster client of hpa-recommender: flags and wiring only; the
// logic is in clients/scaler.
//
// It imports clients/scaler and internal/envflag; nothing imports cmd/.
package main
