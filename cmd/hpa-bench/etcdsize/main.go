// Command etcd-size prints an etcd member's database size and the part of it in use (what a
// compacted history leaves), and the member's RSS when given its pid: the etcd store's memory
// per stored target, once the service has written TARGETS targets and compacted its history.
//
//	go run ./cmd/hpa-bench/etcdsize -endpoint 127.0.0.1:23790 -targets 10000 -pid 1234
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hpa-recommender/hpa-recommender/cmd/hpa-bench/internal/bench"
)

func main() {
	endpoint := flag.String("endpoint", "127.0.0.1:23790", "the etcd member's client address")
	targets := flag.Int("targets", 1, "targets stored, to divide by")
	pid := flag.Int("pid", 0, "the member's pid, for its RSS (0: not read)")
	flag.Parse()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.Status(ctx, *endpoint)
	if err != nil {
		log.Fatal(err)
	}
	n := float64(*targets)
	fmt.Printf("%d targets: database %.1f MB, in use %.1f MB (%.0f B per target)", *targets,
		float64(st.DbSize)/1e6, float64(st.DbSizeInUse)/1e6, float64(st.DbSizeInUse)/n)
	if *pid > 0 {
		p, err := bench.ReadProc(*pid)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("; etcd RSS %.0f MiB (%.0f B per target)", float64(p.RSS)/(1<<20), float64(p.RSS)/n)
	}
	fmt.Println()
}
