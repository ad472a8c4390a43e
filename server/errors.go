package server

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// invalidArgument is a request rejected by conversion or validation.
type invalidArgument struct {
	violations []FieldViolation
}

func (e *invalidArgument) Error() string {
	if len(e.violations) == 0 {
		return "invalid request"
	}
	v := e.violations[0]
	msg := "invalid request: " + v.Field + ": " + v.Description
	if n := len(e.violations) - 1; n > 0 {
		msg += " (and " + strconv.Itoa(n) + " more)"
	}
	return msg
}


// notFound is a missing target or recommendation, with a message safe for the client.
type notFound struct{ msg string }

func (e *notFound) Error() string { return e.msg }

// toStatus maps an error to its canonical gRPC status. It is the one place that does so:
// anything it does not recognise becomes Internal with a generic message, and is logged once.
func (s *Server) toStatus(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	var inv *invalidArgument
	var nf *notFound
	switch {
	case errors.As(err, &inv):
		st := status.New(codes.InvalidArgument, inv.Error())
		br := &errdetails.BadRequest{}
		for _, v := range inv.violations {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Description})
		}
		if withDetails, derr := st.WithDetails(br); derr == nil {
			st = withDetails
		}
		return st.Err()
	case errors.As(err, &nf):
		return status.Error(codes.NotFound, nf.msg)
	case errors.Is(err, store.ErrNotFound):
		return status.Error(codes.NotFound, "target not found")
	case errors.Is(err, store.ErrInvalidArgument):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, store.ErrUnavailable):
		s.log.ErrorContext(ctx, "store unavailable", "method", method, "error", err)
		return status.Error(codes.Unavailable, "the store is unavailable; retry later")
	case errors.Is(err, store.ErrConflict):
		return status.Error(codes.Aborted, "concurrent update of the same target; retry")
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
