package bench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// RoundTrip is what ProbeLoopback measured: the latency of each round trip, and the CPU time
// each cost.
type RoundTrip struct {
	Latency
	// CPU is this process's CPU time (user and system) per round trip, both ends' system calls
	// and goroutine wake-ups included. 0 where the platform does not report it.
	CPU time.Duration `json:"cpu_per_round_trip_ns"`
}

// loopbackMessage is the size of each probe message: a small request, so that the figure is
// the fixed cost of a call (system calls, the network poller, waking goroutines and threads),
// not a copy.
const loopbackMessage = 64

// ProbeLoopback measures what this machine charges for the smallest exchange over loopback
// TCP: one goroutine sends loopbackMessage bytes to another, which sends them back, back to
// back for d, and it returns the latency of each round trip and the CPU each took. Run before
// the load, it gauges the part of a gRPC call's cost that no server code decides, which on one
// VM has varied from day to day: the no-op server's CPU per call was 54-59 µs one day and
// 106 µs the next. Tables measured on different days compare only next to it.
func ProbeLoopback(d time.Duration) (RoundTrip, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return RoundTrip{}, fmt.Errorf("loopback probe: %w", err)
	}
	defer ln.Close()
	echoed := make(chan error, 1)
	go func() { echoed <- echo(ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return RoundTrip{}, fmt.Errorf("loopback probe: %w", err)
	}
	msg := make([]byte, loopbackMessage)
	var rec Recorder
	cpu0 := ProcessCPU()
	for end := time.Now().Add(d); time.Now().Before(end); {
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			_ = c.Close()
			return RoundTrip{}, fmt.Errorf("loopback probe: %w", err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			_ = c.Close()
			return RoundTrip{}, fmt.Errorf("loopback probe: %w", err)
		}
		rec.Record(time.Since(start))
	}
	cpu := ProcessCPU() - cpu0
	if err := errors.Join(c.Close(), <-echoed); err != nil {
		return RoundTrip{}, fmt.Errorf("loopback probe: %w", err)
	}
	out := RoundTrip{Latency: rec.Summary()}
	if cpu0 > 0 && out.Count > 0 {
		out.CPU = cpu / time.Duration(out.Count)
	}
	return out, nil
}

// echo accepts one connection on ln and sends back every message it reads until the other end
// closes it.
func echo(ln net.Listener) error {
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	msg := make([]byte, loopbackMessage)
	for {
		if _, err := io.ReadFull(c, msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if _, err := c.Write(msg); err != nil {
			return err
		}
	}
}

// us formats d in microseconds, one decimal: a round trip takes tens of them.
func us(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + "µs" }

// String is the probe's line in the report: "N round trips of 64 B over loopback TCP, p50 …
// p99 … max …", then the CPU per round trip when measured.
func (r RoundTrip) String() string {
	s := fmt.Sprintf("%d round trips of %d B over loopback TCP, p50 %s p99 %s max %s",
		r.Count, loopbackMessage, us(r.P50), us(r.P99), us(r.Max))
	if r.CPU > 0 {
		s += fmt.Sprintf(", %s CPU each", us(r.CPU))
	}
	return s
}
