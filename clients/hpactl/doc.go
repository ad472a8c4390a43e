// Package hpactl is the logic of the hpactl command: it reads HorizontalPodAutoscaler
// manifests, metric observations and load traces, calls the hpa-recommender service (or, with
// --local, package recommender in process) and prints the answers. cmd/hpactl only wires
// Run to the process.
//
// Subcommands: recommend, simulate, get, describe, list, delete; `hpactl help` prints the usage.
//
// It imports the generated API, package recommender (through clients/internal/local) and
// clients/goclient; never package server.
package hpactl
