// Package hpactl is the logic of the hpactl command: it reads HorizontalPodAutoscaler
// manifests, metric observations and load traces, calls the hpa-recommender service (or, with
// --local, package recommender in process) and prints the answers. cmd/hpactl only wires
// Run to the process.
//
// Subcommands: recommend, simulate, get, describe, history, list, delete, convert, validate,
// backup; `hpactl help` prints the usage. history (history.go, history_plot.go) prints a
// target's decision log as kubectl prints events and charts it; simulate --history
// (simhistory.go) turns that log into a demand trace and replays it through the --trace path.
// validate (validate.go) lists offline every error of the files (the loader's, and the
// service's InvalidArgument violations through clients/internal/local) and warnings for likely
// mistakes (lint.go); exit 1 on any error. backup (backup.go) writes the server's hot backup of
// its bbolt store (AdminService.Backup) to a file, atomically. convert (convert.go) prints the
// autoscaling/v2 YAML of every autoscaler of a file
// as the shared loader read it, so autoscaling/v2beta2, v2beta1 and v1 manifests can be
// rewritten; it calls no server. Every command that reads -f writes the loader's warnings
// (a beta version the API server no longer serves) on stderr.
//
// It imports the generated API, package recommender (through clients/internal/local) and
// clients/goclient; never package server.
package hpactl
