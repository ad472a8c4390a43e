package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// Errors. The etcd client's errors are gRPC statuses (or etcd's rpctypes.EtcdError, which
// carries one's code) with etcd's own text, "etcdserver: ...". None is returned as it is, nor
// wrapped: a server handed one would find the status inside and answer its caller with etcd's
// code and text. Every error the store returns is in its own words, wrapping the store's
// sentinel it is (ErrUnavailable when etcd cannot serve now, ErrNoSpace when etcd's database is
// over its space quota), or the caller's context error.

// timeoutError is the cause of a request deadline the store set itself (as opposed to the
// caller's), which means etcd did not answer: ErrUnavailable.
type timeoutError struct{ d time.Duration }

func (e timeoutError) Error() string { return fmt.Sprintf("etcd did not answer within %s", e.d) }

var errClosed = fmt.Errorf("etcd store closed: %w", store.ErrUnavailable)

// translate maps an error of a request made under rctx (derived from the caller's ctx) onto the
// store's contract: the caller's context error unchanged, ErrUnavailable for a closed store or
// a request that timed out, else translateErr's.
func (s *Store) translate(ctx, rctx context.Context, err error) error {
	var te timeoutError
	switch {
	case s.closed.Load():
		return errClosed
	case errors.As(context.Cause(rctx), &te):
		return fmt.Errorf("%w: %v: %w", store.ErrUnavailable, s.cfg.Endpoints, te)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return translateErr(s.cfg.Endpoints, err)
}

// translateErr puts an error of the etcd client (of the etcd at endpoints) in the store's words:
// what etcd's error means, as a *store.NoSpaceError when etcd's database is over its space
// quota, wrapping ErrUnavailable when it means etcd cannot serve now (no connection, no leader,
// a timeout, overload), which a caller may retry.
func translateErr(endpoints []string, err error) error {
	if errors.Is(asEtcd(err), rpctypes.ErrNoSpace) {
		return &store.NoSpaceError{Where: fmt.Sprintf("etcd's database at %s (its space quota, --quota-backend-bytes)",
			strings.Join(endpoints, ",")), Err: errNoSpace}
	}
	what, unavailable := describe(err)
	if unavailable {
		return fmt.Errorf("%w: %s", store.ErrUnavailable, what)
	}
	return errors.New(what)
}

// errNoSpace is what etcd's "database space exceeded" means.
var errNoSpace = errors.New("etcd's database is over its space quota, and etcd refuses writes until it is " +
	"compacted and defragmented and its NOSPACE alarm disarmed, or its --quota-backend-bytes raised")

// describe says in the store's words what the etcd client's error err means, and whether it
// means that etcd cannot serve now.
func describe(err error) (what string, unavailable bool) {
	e := asEtcd(err)
	switch {
	case errors.Is(e, context.Canceled) || errors.Is(e, context.DeadlineExceeded):
		return "etcd did not answer", true // the client's own deadline, or its closing
	case errors.Is(e, clientv3.ErrNoAvailableEndpoints):
		return "no etcd endpoint to connect to", true
	case errors.Is(e, rpctypes.ErrNoLeader):
		return "etcd has no leader", true
	case errors.Is(e, rpctypes.ErrTooManyRequests):
		return "etcd is overloaded", true
	case errors.Is(e, rpctypes.ErrTimeout) || errors.Is(e, rpctypes.ErrTimeoutDueToLeaderFail) ||
		errors.Is(e, rpctypes.ErrTimeoutDueToConnectionLost) || errors.Is(e, rpctypes.ErrTimeoutWaitAppliedIndex):
		return "etcd timed out", true
	case errors.Is(e, rpctypes.ErrAuthFailed) || errors.Is(e, rpctypes.ErrInvalidAuthToken) ||
		errors.Is(e, rpctypes.ErrUserEmpty) || errors.Is(e, rpctypes.ErrAuthOldRevision):
		return "etcd refused the store's credentials", false
	case errors.Is(e, rpctypes.ErrRequestTooLarge):
		return "the request is larger than etcd accepts (its --max-request-bytes)", false
	case errors.Is(e, rpctypes.ErrTooManyOps):
		return "the transaction has more operations than etcd accepts (its --max-txn-ops)", false
	}
	code := codeOf(e)
	switch code {
	case codes.Unavailable:
		return "etcd cannot serve (no connection, no leader, or a member stopping)", true
	case codes.DeadlineExceeded, codes.Canceled:
		return "etcd did not answer", true
	case codes.ResourceExhausted:
		return "etcd is out of resources", true
	case codes.Unauthenticated:
		return "etcd refused the store's credentials", false
	case codes.PermissionDenied:
		return "etcd denied the store's user access to its keys", false
	}
	return fmt.Sprintf("etcd refused the request (gRPC code %s)", code), false
}

// asEtcd returns err as etcd's own error value when it is one of etcd's errors (so errors.Is
// compares it with rpctypes' values), else err.
func asEtcd(err error) error {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee
	}
	var st interface{ GRPCStatus() *status.Status }
	if errors.As(err, &st) {
		return rpctypes.Error(st.GRPCStatus().Err())
	}
	return err
}

// codeOf is the gRPC code of err, an error asEtcd returned: codes.Unknown for one that has none.
func codeOf(err error) codes.Code {
	if ee, ok := err.(rpctypes.EtcdError); ok {
		return ee.Code()
	}
	return status.Code(err)
}
