//go:build !linux

package server_test

import "time"

// processCPU is not measured here (0): the benchmarks report no cpu-ns/op.
func processCPU() time.Duration { return 0 }
