package server_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the server's tests if any goroutine outlives them: a server, its store
// watcher, collector and tokens watcher, a reloader or a client connection left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
