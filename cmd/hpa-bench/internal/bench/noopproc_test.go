package bench

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStartNoopProcessFailures: a command that cannot start, one that says something else
// first, and one that says nothing before its context ends are each refused with an error
// that quotes what the process said (its first line, its standard error), and none is left
// running.
func TestStartNoopProcessFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
		ctx  func() (context.Context, context.CancelFunc)
		want []string
	}{
		{"missing", []string{"/nonexistent/hpa-bench"}, nil, []string{"/nonexistent/hpa-bench"}},
		{"empty", nil, nil, []string{"no command"}},
		{"wrong first line", []string{"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"}, nil,
			[]string{`"hello"`, NoopServingPrefix, "oops", "exit status 3"}},
		{"silent", []string{"/bin/sh", "-c", "echo waiting >&2; exec sleep 60"},
			func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 300*time.Millisecond)
			},
			[]string{"context deadline exceeded", "waiting"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			start := time.Now()
			p, err := startNoopProcess(ctx, tc.argv)
			if err == nil {
				p.stop()
				t.Fatalf("started %q", tc.argv)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %s: the process was waited for, not killed", d)
			}
		})
	}
}

// TestNoopProcessStops: a process that serves (here a shell that says the line and sleeps)
// gives its address and pid, and stop ends it.
func TestNoopProcessStops(t *testing.T) {
	p, err := startNoopProcess(t.Context(), []string{"/bin/sh", "-c", "echo '" + NoopServingPrefix + "127.0.0.1:1'; exec sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	if p.addr != "127.0.0.1:1" || p.pid() <= 0 {
		t.Errorf("address %q, pid %d", p.addr, p.pid())
	}
	p.stop()
	select {
	case <-p.exited:
	default:
		t.Error("the process still runs after stop")
	}
}

// TestNoopProcessWrongLineKeepsRunning: a process that says something else first and keeps
// running is killed, not waited for.
func TestNoopProcessWrongLineKeepsRunning(t *testing.T) {
	start := time.Now()
	_, err := startNoopProcess(t.Context(), []string{"/bin/sh", "-c", "echo listening elsewhere; exec sleep 60"})
	if err == nil || !strings.Contains(err.Error(), "listening elsewhere") || !strings.Contains(err.Error(), "still running") {
		t.Errorf("error %v, want one quoting the line and saying the process still ran", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s: the process was waited for, not killed", d)
	}
}

// TestNoopProcessGrandchildKeepsStderr: a process that fails while a child of its own keeps
// its standard error open is still refused promptly (Wait does not wait for the child).
func TestNoopProcessGrandchildKeepsStderr(t *testing.T) {
	start := time.Now()
	_, err := startNoopProcess(t.Context(), []string{"/bin/sh", "-c", "sleep 30 & echo child $! >&2; echo wrong; exit 4"})
	took := time.Since(start)
	var child int
	if err != nil {
		if i := strings.Index(err.Error(), "child "); i >= 0 {
			fmt.Sscanf(err.Error()[i:], "child %d", &child)
		}
	}
	if child > 0 {
		defer syscall.Kill(child, syscall.SIGKILL)
	}
	if err == nil || !strings.Contains(err.Error(), `"wrong"`) {
		t.Errorf("error %v, want one quoting the first line", err)
	}
	if took > 20*time.Second {
		t.Errorf("took %s: waited for the child holding standard error", took)
	}
}
