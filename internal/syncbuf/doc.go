// Package syncbuf is a byte buffer that one goroutine may write while another reads it: a
// child process's output, or a log sink, read while it is being written.
//
// It imports the standard library only, nothing of this module. The load tool
// (cmd/hpa-bench/internal/bench) and tests use it.
package syncbuf
