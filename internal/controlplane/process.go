package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one child binary whose output goes to a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // valid after done is closed
}

func startProcess(name, bin, logDir string, args ...string) (*process, error) {
	return startProcessEnv(name, bin, logDir, nil, args...)
}

// startProcessEnv is startProcess with env added to this process's environment.
func startProcessEnv(name, bin, logDir string, env []string, args ...string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// processes are child processes in start order.
type processes []*process

// stop stops them in reverse order, each with 10 s for a clean exit.
func (ps processes) stop() {
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].stop(10 * time.Second)
	}
}

// logs is the end (up to maxBytes each) of their logs.
func (ps processes) logs(maxBytes int) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "----- %s (%s) -----\n%s\n", p.name, p.logPath, p.tail(maxBytes))
	}
	return b.String()
}

// exited reports whether the process has ended, with its error.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	if p == nil {
		return
	}
	if done, _ := p.exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail is the end of the process's log, for failure messages.
func (p *process) tail(maxBytes int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > maxBytes {
		b = b[len(b)-maxBytes:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. Another process may take one
// before it is used; the start-up paths fail clearly (and tests may retry) if that happens.
func freePorts(n int) ([]int, error) {
	var ls []io.Closer
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

var errExited = errors.New("exited")
