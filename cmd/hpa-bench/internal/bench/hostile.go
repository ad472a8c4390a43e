package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Hostile kinds, sent in turn by each hostile caller.
const (
	hostileMalformed = iota // invalid spec and pods: InvalidArgument
	hostileHuge             // 20,000 pods, about 3 MB: a valid but huge request
	hostileOversize         // over the server's 4 MiB request limit: ResourceExhausted
	hostileAbandoned        // cancelled about 100 µs after it is sent
	hostileSlow             // a raw TCP connection that trickles the HTTP/2 preface, then hangs up
	hostileKinds
)

// HostileStats counts the hostile calls of one run, by kind, and how many were answered with
// the expected outcome.
type HostileStats struct {
	Sent       [hostileKinds]int64 `json:"sent"` // malformed, huge, oversize, abandoned, slow
	Unexpected int64               `json:"unexpected"`
	// Server file descriptors and threads before the run and after it (2s after the last
	// hostile call): a difference means something leaked.
	FDsBefore     int `json:"fds_before,omitempty"`
	FDsAfter      int `json:"fds_after,omitempty"`
	ThreadsBefore int `json:"threads_before,omitempty"`
	ThreadsAfter  int `json:"threads_after,omitempty"`
}

// hostile drives Config.Hostile callers that send malformed, huge, oversized, abandoned and
// slow calls until stop is closed.
type hostile struct {
	addr     string
	client   pb.RecommenderServiceClient
	wl       *workload.Workload
	huge     *pb.RecommendRequest
	oversize *pb.RecommendRequest
	stats    HostileStats
	sent     [hostileKinds]atomic.Int64
	bad      atomic.Int64
}

func newHostile(addr string, client pb.RecommenderServiceClient, wl *workload.Workload) *hostile {
	h := &hostile{addr: addr, client: client, wl: wl}
	h.huge = wl.RequestWithPods(0, 20000, time.Now())
	h.oversize = wl.RequestWithPods(0, 1, time.Now())
	pad := make([]byte, 5<<20)
	for i := range pad {
		pad[i] = 'x'
	}
	h.oversize.Pods[0].Name = string(pad)
	return h
}

func (h *hostile) run(ctx context.Context, callers int) {
	var wg sync.WaitGroup
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; ctx.Err() == nil; k++ {
				kind := k % hostileKinds
				h.sent[kind].Add(1)
				if !h.one(ctx, kind) && ctx.Err() == nil {
					h.bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
}

// one sends one hostile call and reports whether the outcome was the expected one.
func (h *hostile) one(ctx context.Context, kind int) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	codeOf := func(err error) codes.Code { return status.Code(err) }
	switch kind {
	case hostileMalformed:
		req := h.wl.Request(0, time.Now())
		req.Spec = &pb.HorizontalPodAutoscalerSpec{MaxReplicas: -1}
		req.Pods = append(req.Pods, &pb.PodState{Phase: "Bogus"})
		_, err := h.client.Recommend(ctx, req)
		return codeOf(err) == codes.InvalidArgument
	case hostileHuge:
		_, err := h.client.Recommend(ctx, h.huge)
		return err == nil
	case hostileOversize:
		_, err := h.client.Recommend(ctx, h.oversize)
		return codeOf(err) == codes.ResourceExhausted
	case hostileAbandoned:
		actx, acancel := context.WithCancel(ctx)
		go func() { time.Sleep(100 * time.Microsecond); acancel() }()
		_, err := h.client.Recommend(actx, h.wl.Request(1, time.Now()))
		acancel()
		return err == nil || codeOf(err) == codes.Canceled
	default: // hostileSlow
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", h.addr)
		if err != nil {
			return false
		}
		defer conn.Close()
		for _, b := range []byte("PRI * HTTP/2.0\r\n\r\nSM") {
			if _, err := conn.Write([]byte{b}); err != nil {
				return true // the server may hang up on a slow client
			}
			select {
			case <-ctx.Done():
				return true
			case <-time.After(50 * time.Millisecond):
			}
		}
		return true
	}
}

// finish fills in the counts.
func (h *hostile) finish() HostileStats {
	s := h.stats
	for i := range s.Sent {
		s.Sent[i] = h.sent[i].Load()
	}
	s.Unexpected = h.bad.Load()
	return s
}

// countFDs returns the number of open file descriptors and the threads of process pid.
func countFDs(pid int) (fds, threads int, err error) {
	dir := "/proc/" + strconv.Itoa(pid)
	ents, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return 0, 0, fmt.Errorf("count server fds: %w", err)
	}
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return 0, 0, fmt.Errorf("count server threads: %w", err)
	}
	return len(ents), len(tasks), nil
}
