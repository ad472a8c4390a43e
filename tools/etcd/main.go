// Command etcd is the etcd server (go.etcd.io/etcd/server/v3, version pinned in go.mod),
// built from the module proxy for the end-to-end tests' control plane. `go install
// go.etcd.io/etcd/server/v3@VERSION` refuses the module because of its replace directives;
// a module whose main calls etcdmain.Main builds the same binary (see shared/TOOLING.md §5).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
