package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// inflightBound is Config.MaxInflight: it counts the Recommend calls being handled and refuses
// those past the bound at once, before the handler's work (the request is decoded by then:
// calls waiting in the transport are not counted). A refusal costs an atomic add and a
// prebuilt error; it is not logged one by one (the gRPC metrics count every call by its code),
// but at most once a second, with how many were refused since the last such line. The zero
// value is not used: without --max-inflight there is no bound.
type inflightBound struct {
	max     int64
	log     *slog.Logger
	err     error // the refusal, built once
	n       atomic.Int64
	refused atomic.Int64 // since the last log line
	logged  atomic.Int64 // unix nanoseconds of the last log line
}

func newInflightBound(limit int, log *slog.Logger) *inflightBound {
	return &inflightBound{max: int64(limit), log: log, err: exhausted(
		fmt.Sprintf("the server is handling its limit of %d Recommend calls at once (--max-inflight); retry later", limit),
		ReasonMaxInflight, maxInflightBackoff)}
}

// unary is the bound as an interceptor of Recommend calls: it sits before the logging
// interceptor, so a refusal is counted by the metrics but not logged call by call.
func (b *inflightBound) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod != pb.RecommenderService_Recommend_FullMethodName {
		return handler(ctx, req)
	}
	if b.n.Add(1) > b.max {
		b.n.Add(-1)
		return nil, b.refuse(ctx)
	}
	defer b.n.Add(-1)
	return handler(ctx, req)
}

// refuse records a refusal and returns its error, logging a warning at most once a second.
func (b *inflightBound) refuse(ctx context.Context) error {
	b.refused.Add(1)
	now, last := time.Now().UnixNano(), b.logged.Load()
	if now-last >= int64(time.Second) && b.logged.CompareAndSwap(last, now) {
		b.log.WarnContext(ctx, "refusing Recommend calls: --max-inflight reached", "max_inflight", b.max, "refused", b.refused.Swap(0))
	}
	return b.err
}
