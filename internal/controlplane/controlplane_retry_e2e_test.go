//go:build e2e

package controlplane

import (
	"net"
	"net/url"
	"strconv"
	"testing"
)

// TestStartRetriesOnATakenPort: when another process holds a port the control plane picked
// (here the test holds etcd's client port), etcd exits with its address in use and the whole
// control plane starts again on new ports.
func TestStartRetriesOnATakenPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port

	picks := 0
	pickPorts = func(n int) ([]int, error) {
		picks++
		ports, err := freePorts(n)
		if picks == 1 && err == nil {
			ports[0] = heldPort // etcd's client URL
		}
		return ports, err
	}
	defer func() { pickPorts = freePorts }()

	cp := Start(t, Options{NoControllerManager: true})
	if picks != 2 {
		t.Errorf("ports picked %d times, want 2 (the taken port, then new ones)", picks)
	}
	u, err := url.Parse(cp.EtcdURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Port() == strconv.Itoa(heldPort) {
		t.Errorf("etcd at %s, the port the test holds", cp.EtcdURL)
	}
	if _, err := cp.Client.Discovery().ServerVersion(); err != nil {
		t.Errorf("kube-apiserver after the retry: %v", err)
	}
}
