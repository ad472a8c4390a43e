package scaler

import (
	"context"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// queueReport delivers an outcome now, or keeps it for the next sync when the service cannot
// be reached. The outcome is never a reason to write the scale again.
func (s *Scaler) queueReport(ctx context.Context, log *slog.Logger, ts *targetState, r *pb.ReportScaleRequest) {
	ts.pending = append(ts.pending, r)
	if n := len(ts.pending); n > maxPendingReports {
		log.Warn("dropping undelivered scale reports; the service infers applied decisions from the next currentReplicas", "dropped", n-maxPendingReports)
		ts.pending = append([]*pb.ReportScaleRequest(nil), ts.pending[n-maxPendingReports:]...)
	}
	s.flushReports(ctx, log, ts)
}

// flushReports sends the pending outcomes in order; it stops at the first one the service
// cannot be reached for. An outcome the service rejects for good (an unknown id, an invalid
// request) is dropped.
func (s *Scaler) flushReports(ctx context.Context, log *slog.Logger, ts *targetState) {
	defer s.updatePending(ts)
	for len(ts.pending) > 0 {
		r := ts.pending[0]
		rctx, cancel := s.rpcContext(ctx)
		resp, err := s.rec.ReportScale(rctx, r)
		cancel()
		if err != nil && (unreachable(err) || status.Code(err) == codes.ResourceExhausted) {
			s.tel.reports.WithLabelValues("error").Inc()
			log.Warn("scale report not delivered; will retry", "recommendationId", r.GetRecommendationId(), "error", err)
			return
		}
		switch {
		case err != nil:
			s.tel.reports.WithLabelValues("rejected").Inc()
			log.Warn("scale report rejected; dropped", "recommendationId", r.GetRecommendationId(), "error", err)
		case resp.GetRecorded():
			s.tel.reports.WithLabelValues("recorded").Inc()
		default:
			s.tel.reports.WithLabelValues("duplicate").Inc()
		}
		ts.pending = ts.pending[1:]
	}
}

func (s *Scaler) updatePending(ts *targetState) {
	ts.npending.Store(int32(len(ts.pending)))
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int32
	for _, t := range s.targets {
		n += t.npending.Load()
	}
	s.tel.reportsPending.Set(float64(n))
}
