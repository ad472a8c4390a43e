package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// invalidArgument is a request rejected by conversion or validation.
type invalidArgument struct {
	violations []apiconv.FieldViolation
}

func (e *invalidArgument) Error() string { return apiconv.InvalidArgument(e.violations).Message() }

// notFound is a missing target or recommendation, with a message safe for the client.
type notFound struct{ msg string }

func (e *notFound) Error() string { return e.msg }

// unauthenticated is a call without valid credentials; the message never echoes them.
type unauthenticated struct{ msg string }

func (e *unauthenticated) Error() string { return e.msg }

// permissionDenied is a caller touching another cluster's targets.
type permissionDenied struct{ msg string }

func (e *permissionDenied) Error() string { return e.msg }

// failedPrecondition is a call the server cannot serve as configured (a backup of a store that
// has none), with a message safe for the client that says what to do instead.
type failedPrecondition struct{ msg string }

func (e *failedPrecondition) Error() string { return e.msg }

// rateLimited is a cluster over its --rate-limit; retryAfter is when a token is available.
type rateLimited struct {
	cluster    string
	retryAfter time.Duration
}

func (e *rateLimited) Error() string {
	return fmt.Sprintf("cluster %q is over its rate limit; retry in %s", e.cluster, e.retryAfter.Round(time.Millisecond))
}

// toStatus maps an error to its canonical gRPC status. It is the one place that does so:
// anything it does not recognise becomes Internal with a generic message, and is logged once.
func (s *Server) toStatus(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	var inv *invalidArgument
	var nf *notFound
	var unauth *unauthenticated
	var denied *permissionDenied
	var limited *rateLimited
	var precondition *failedPrecondition
	switch {
	case errors.As(err, &inv):
		return apiconv.InvalidArgument(inv.violations).Err()
	case errors.As(err, &nf):
		return status.Error(codes.NotFound, nf.msg)
	case errors.As(err, &unauth):
		return status.Error(codes.Unauthenticated, unauth.msg)
	case errors.As(err, &denied):
		return status.Error(codes.PermissionDenied, denied.msg)
	case errors.As(err, &precondition):
		return status.Error(codes.FailedPrecondition, precondition.msg)
	case errors.As(err, &limited):
		return exhausted(limited.Error(), ReasonRateLimited, limited.retryAfter)
	case errors.Is(err, store.ErrNotFound):
		return status.Error(codes.NotFound, "target not found")
	case errors.Is(err, store.ErrInvalidArgument):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, store.ErrUnavailable):
		s.log.ErrorContext(ctx, "store unavailable", "method", method, "error", err)
		s.storeH.errors.WithLabelValues(storeErrUnavailable).Inc()
		return status.Error(codes.Unavailable, "the store is unavailable; retry later")
	case errors.Is(err, store.ErrConflict):
		return status.Error(codes.Aborted, "concurrent update of the same target; retry")
	case errors.Is(err, store.ErrNoSpace):
		// The driver's text goes to the log only; the caller learns what is full.
		s.log.ErrorContext(ctx, "store out of space", "method", method, "error", err)
		s.storeH.errors.WithLabelValues(storeErrNoSpace).Inc()
		where := "the store"
		var ns *store.NoSpaceError
		if errors.As(err, &ns) && ns.Where != "" {
			where = ns.Where
		}
		return exhausted("the disk of the store is full: no space left to write "+where+"; nothing was written, and writes succeed again once it has room",
			ReasonStoreFull, storeFullBackoff)
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	s.log.ErrorContext(ctx, "internal error", "method", method, "error", err)
	return status.Error(codes.Internal, "internal error")
}

// The reasons (google.rpc.ErrorInfo, domain ErrorDomain) of the ResourceExhausted answers, so
// that a caller tells them apart without reading the message: a cluster over its --rate-limit,
// a replica at its --max-inflight, and a store whose disk is full.
const (
	ErrorDomain        = "hpa-recommender"
	ReasonRateLimited  = "RATE_LIMITED"
	ReasonMaxInflight  = "MAX_INFLIGHT"
	ReasonStoreFull    = "STORE_FULL"
	maxInflightBackoff = time.Second      // the refusal's RetryInfo
	storeFullBackoff   = 10 * time.Second // a disk is not freed in a moment
)

// exhausted is a ResourceExhausted status with msg, an ErrorInfo of reason and a RetryInfo of
// retryAfter.
func exhausted(msg, reason string, retryAfter time.Duration) error {
	st := status.New(codes.ResourceExhausted, msg)
	if withDetails, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}); err == nil {
		st = withDetails
	}
	return st.Err()
}
