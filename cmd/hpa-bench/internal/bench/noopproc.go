package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/hpa-recommender/hpa-recommender/internal/syncbuf"
)

// NoopServingPrefix starts the line a no-op server process writes to its standard output
// first, followed by the address it listens on (hpa-bench --serve-noop writes it).
const NoopServingPrefix = "serving the no-op baseline on "

// noopStartTimeout bounds how long a no-op server process may take to say where it listens.
const noopStartTimeout = 30 * time.Second

// noopProcess is a no-op server running as a process of its own.
type noopProcess struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncbuf.Buffer
	exited chan struct{} // closed when the process has exited and been waited for
	err    error         // its exit status, once exited is closed
}

// startNoopProcess runs argv, which must serve the no-op baseline and first write
// NoopServingPrefix and its address on a line of its standard output, and returns once it
// has. The process is stopped by stop, and killed if ctx ends first.
func startNoopProcess(ctx context.Context, argv []string) (*noopProcess, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command for the no-op server process")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// A pipe of our own rather than StdoutPipe: Wait, which runs as soon as the process
	// exits, closes a StdoutPipe's reader, possibly before its last line is read. This one
	// ends only when the process has closed its end and the reader has read everything.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	p := &noopProcess{cmd: cmd, stderr: &syncbuf.Buffer{Max: 64 << 10}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	// A child of the process that keeps its standard error open must not hold Wait (and so
	// stop and kill) once the process itself has exited.
	cmd.WaitDelay = time.Second
	// The parent-death signal comes when the thread that started the process ends: Go ends a
	// thread only when a goroutine exits locked to it, which none of this package's does.
	dieWithParent(cmd)
	err = cmd.Start()
	w.Close() // the process has its copy
	if err != nil {
		stdout.Close()
		return nil, fmt.Errorf("start the no-op server process %q: %w", argv[0], err)
	}
	line := make(chan string, 1)
	go func() {
		defer stdout.Close()
		sc := bufio.NewScanner(stdout)
		first := ""
		if sc.Scan() {
			first = sc.Text()
		}
		line <- first
		for sc.Scan() { // keep draining, so that later writes never block the process
		}
	}()
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	fail := func(format string, args ...any) (*noopProcess, error) {
		p.kill()
		msg := fmt.Sprintf(format, args...)
		if s := strings.TrimSpace(p.stderr.String()); s != "" {
			msg += ": " + s
		}
		return nil, errors.New(msg)
	}
	timer := time.NewTimer(noopStartTimeout)
	defer timer.Stop()
	select {
	case l := <-line:
		addr, ok := strings.CutPrefix(l, NoopServingPrefix)
		if !ok || addr == "" {
			// A process that said something else: give it a moment to finish its error
			// message and exit, for the error to quote both.
			status := "still running"
			select {
			case <-p.exited:
				status = fmt.Sprint(p.err)
			case <-time.After(time.Second):
			}
			return fail("the no-op server process %q wrote %q first, not %q and its address (%s)", argv[0], l, NoopServingPrefix, status)
		}
		p.addr = addr
	case <-timer.C:
		return fail("the no-op server process %q did not say where it listens within %s", argv[0], noopStartTimeout)
	case <-ctx.Done():
		return fail("start the no-op server process: %v", ctx.Err())
	}
	return p, nil
}

// pid is the process's id.
func (p *noopProcess) pid() int { return p.cmd.Process.Pid }

// stop asks the process to end (SIGTERM), and kills it if it has not within 10 s.
func (p *noopProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

// kill kills the process and waits for it.
func (p *noopProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}
