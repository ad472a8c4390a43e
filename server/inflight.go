package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// inflightBound is Config.MaxInflight: it counts the Recommend calls being handled and refuses
// those past the bound at once, before the handler's work (the request is decoded by then:
// calls waiting in the transport are not counted). A refusal costs an atomic add and a
// prebuilt error; it is not logged one by one (the gRPC metrics count every call by its code),
// but at most once a second, with how many were refused since the last such line. The zero
// value (max 0) admits everything.
type inflightBound struct {
	max     int64
	err     error // the refusal, built once
	n       atomic.Int64
	refused atomic.Int64 // since the last log line
	logged  atomic.Int64 // unix nanoseconds of the last log line
}

func newInflightBound(limit int) *inflightBound {
	return &inflightBound{max: int64(limit), err: exhausted(
		fmt.Sprintf("the server is handling its limit of %d Recommend calls at once (--max-inflight); retry later", limit),
		ReasonMaxInflight, maxInflightBackoff)}
}

// admit counts a call in; when it returns false the call is refused with b.err. Either way the
// caller must call done when the call ends.
func (b *inflightBound) admit() bool {
	return b == nil || b.max <= 0 || b.n.Add(1) <= b.max
}

func (b *inflightBound) done() {
	if b != nil && b.max > 0 {
		b.n.Add(-1)
	}
}

// refuse records a refusal and returns its error, logging a warning at most once a second.
func (b *inflightBound) refuse(ctx context.Context, log *slog.Logger) error {
	b.refused.Add(1)
	now, last := time.Now().UnixNano(), b.logged.Load()
	if now-last >= int64(time.Second) && b.logged.CompareAndSwap(last, now) {
		log.WarnContext(ctx, "refusing Recommend calls: --max-inflight reached", "max_inflight", b.max, "refused", b.refused.Swap(0))
	}
	return b.err
}

// isRefusal says whether err is the bound's refusal, which logCall does not log.
func (b *inflightBound) isRefusal(err error) bool { return b != nil && b.err != nil && err == b.err }
