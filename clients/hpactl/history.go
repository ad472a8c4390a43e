package hpactl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// The history command prints a target's decision log (ListDecisions) the way `kubectl get
// events` prints events: one row per entry, oldest first, LAST SEEN relative to now and a run
// of identical decisions as "3m12s (x4 over 10m)". --output json prints the ListDecisions
// shape (every page in one response, newest first as the API returns them); --plot draws the
// log over real time.

// Outcomes of a logged decision's scale write (DecisionLogEntry.outcome).
const (
	outcomeSucceeded = "succeeded"
	outcomeFailed    = "failed"
)

// historyFlags are the flags history and simulate --history share.
type historyFlags struct {
	since time.Duration
}

func registerSince(fs *flag.FlagSet, h *historyFlags) {
	fs.DurationVar(&h.since, "since", 0, "only entries newer than this, e.g. 6h (0: every kept entry)")
}

// fetchHistory reads the whole decision log of ref, since --since, oldest first.
func (a *App) fetchHistory(ctx context.Context, c *goclient.Client, ref *pb.TargetRef, h historyFlags) ([]*pb.DecisionLogEntry, error) {
	req := &pb.ListDecisionsRequest{Target: ref, PageSize: 1000}
	if h.since > 0 {
		req.Since = timestamppb.New(a.now().Add(-h.since))
	}
	entries, err := c.ListAllDecisions(ctx, req, 0)
	if err != nil {
		return nil, err
	}
	slices.Reverse(entries)
	return entries, nil
}

func (a *App) history(ctx context.Context, args []string) error {
	fs := a.newFlagSet("history")
	var t targetFlags
	registerTarget(fs, &t, true)
	var h historyFlags
	registerSince(fs, &h)
	plotPath := fs.String("plot", "", "write a chart of replicas, the metrics' proposals and values over time (.png or .svg)")
	out := registerOutput(fs)
	conn := a.registerConn(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if h.since < 0 {
		return errors.New("--since must not be negative")
	}
	if *plotPath != "" {
		if _, err := plotFormat(*plotPath); err != nil {
			return err
		}
	}
	refs, _, err := t.targets(a.Stderr)
	if err != nil {
		return err
	}
	if *plotPath != "" && len(refs) > 1 {
		return fmt.Errorf("--plot draws one target and manifest %s holds %d: pick one with --name", t.file, len(refs))
	}
	c, err := conn.dial(fs)
	if err != nil {
		return err
	}
	defer c.Close()
	now := a.now()
	return a.forEach(refs, func(i int) error {
		entries, err := a.fetchHistory(ctx, c, refs[i], h)
		if err != nil {
			return err
		}
		if *plotPath != "" {
			if len(entries) == 0 {
				return fmt.Errorf("--plot: %s has no decisions in the range", targetString(refs[i]))
			}
			if err := writeHistoryPlot(*plotPath, targetString(refs[i]), entries); err != nil {
				return err
			}
		}
		if *out == "json" {
			resp := &pb.ListDecisionsResponse{Decisions: slices.Clone(entries)}
			slices.Reverse(resp.Decisions) // the API's order: newest first
			return writeJSON(a.Stdout, resp)
		}
		if len(refs) > 1 {
			if i > 0 {
				fmt.Fprintln(a.Stdout)
			}
			fmt.Fprintf(a.Stdout, "%s:\n", targetString(refs[i]))
		}
		writeHistory(a.Stdout, entries, now)
		if *plotPath != "" {
			fmt.Fprintf(a.Stdout, "\nwrote %s\n", *plotPath)
		}
		return nil
	})
}

// writeHistory prints entries (oldest first) as kubectl prints events.
func writeHistory(w io.Writer, entries []*pb.DecisionLogEntry, now time.Time) {
	if len(entries) == 0 {
		fmt.Fprintln(w, "No decisions found.")
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tREPLICAS\tOUTCOME\tMESSAGE")
	for _, e := range entries {
		msg := e.GetMessage()
		if e.GetOutcome() == outcomeFailed && e.GetError() != "" {
			msg += "; the scale write failed: " + e.GetError()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d -> %d\t%s\t%s\n", lastSeen(e, now), entryType(e), entryReason(e),
			e.GetCurrentReplicas(), e.GetDesiredReplicas(), outcomeString(e), msg)
	}
	tw.Flush()
}

// lastSeen is kubectl's LAST SEEN of an event: the age of the last occurrence, and for a run
// "(xN over AGE)" with the age of the first.
func lastSeen(e *pb.DecisionLogEntry, now time.Time) string {
	last := e.GetUntil()
	if last == nil {
		last = e.GetTime()
	}
	s := duration.HumanDuration(now.Sub(last.AsTime()))
	if e.GetCount() > 1 {
		s += fmt.Sprintf(" (x%d over %s)", e.GetCount(), duration.HumanDuration(now.Sub(e.GetTime().AsTime())))
	}
	return s
}

// entryType is Warning for a failed scale write or a metric that could not be computed, else
// Normal.
func entryType(e *pb.DecisionLogEntry) string {
	if e.GetOutcome() == outcomeFailed || slices.ContainsFunc(e.GetMetrics(), func(m *pb.DecisionLogMetric) bool { return m.GetError() != "" }) {
		return "Warning"
	}
	return "Normal"
}

// outcomeString is the OUTCOME column: the scale write's outcome, "-" for a decision that
// asked for no scale.
func outcomeString(e *pb.DecisionLogEntry) string {
	if e.GetRecommendationId() == "" && e.GetCurrentReplicas() == e.GetDesiredReplicas() {
		return "-"
	}
	return dash(e.GetOutcome())
}

// entryReason is the REASON column. A scale is SuccessfulRescale or FailedRescale (the in-tree
// controller's event reasons) by its reported outcome, UnreportedRescale without a report.
// Otherwise it is what held the count (heldReason), or the ScalingActive reason.
func entryReason(e *pb.DecisionLogEntry) string {
	if e.GetCurrentReplicas() != e.GetDesiredReplicas() {
		switch e.GetOutcome() {
		case outcomeSucceeded:
			return "SuccessfulRescale"
		case outcomeFailed:
			return "FailedRescale"
		}
		return "UnreportedRescale"
	}
	if r := heldReason(e); r != "" {
		return r
	}
	for _, c := range e.GetConditions() {
		if c.GetType() == "ScalingActive" {
			return c.GetReason()
		}
	}
	return "-"
}

// heldReason is the condition reason of what kept an entry's count from its metrics'
// proposal: ScalingActive False (no metric computed), a ScalingLimited True reason (a policy
// or the min/max bounds), or an AbleToScale stabilization reason; empty when nothing held it.
func heldReason(e *pb.DecisionLogEntry) string {
	var limited, stabilized string
	for _, c := range e.GetConditions() {
		switch {
		case c.GetType() == "ScalingActive" && c.GetStatus() == "False":
			return c.GetReason()
		case c.GetType() == "ScalingLimited" && c.GetStatus() == "True":
			limited = c.GetReason()
		case c.GetType() == "AbleToScale" && (c.GetReason() == "ScaleDownStabilized" || c.GetReason() == "ScaleUpStabilized"):
			stabilized = c.GetReason()
		}
	}
	switch {
	case e.GetFinal() == e.GetProposal():
		return ""
	case e.GetStabilized() != e.GetProposal() && stabilized != "":
		return stabilized
	case limited != "":
		return limited
	}
	return stabilized
}
