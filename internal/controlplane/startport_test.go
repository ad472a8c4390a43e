package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStartOnFreePortRetriesATakenPort: a process that exits because its port was taken is
// started again on another port; one that fails otherwise, or serves, is not.
func TestStartOnFreePortRetriesATakenPort(t *testing.T) {
	dir := t.TempDir()
	run := func(script string) func(int) (*process, error) {
		return func(port int) (*process, error) {
			p, err := startProcess("fake", "/bin/sh", dir, "-c", script)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if err := waitFor(ctx, p, func(context.Context) (bool, error) { return false, nil }); err != nil && ctx.Err() == nil {
				return p, err // exited
			}
			return p, nil // still running: serving
		}
	}
	var ports []int
	taken := run("echo 'listen tcp 127.0.0.1: bind: address already in use'; exit 1")
	serving := run("sleep 30")
	calls := 0
	p, err := startOnFreePort(func(port int) (*process, error) {
		ports = append(ports, port)
		calls++
		if calls < 3 {
			return taken(port)
		}
		return serving(port)
	})
	if err != nil || calls != 3 {
		t.Fatalf("started after %d attempts, error %v; want the third to serve", calls, err)
	}
	p.stop(time.Second)
	if ports[0] == ports[1] && ports[1] == ports[2] {
		t.Errorf("every attempt got port %d", ports[0])
	}

	calls = 0
	_, err = startOnFreePort(func(port int) (*process, error) { calls++; return run("echo 'no such flag'; exit 2")(port) })
	if err == nil || calls != 1 || strings.Contains(err.Error(), "address already in use") {
		t.Errorf("another failure: %d attempts, error %v; want one attempt and its error", calls, err)
	}
	calls = 0
	_, err = startOnFreePort(func(port int) (*process, error) { calls++; return taken(port) })
	if err == nil || calls != 3 {
		t.Errorf("a port taken every time: %d attempts, error %v; want 3 and the error", calls, err)
	}
}
