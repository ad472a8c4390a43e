package hpactl

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// printError writes err for a person: a gRPC error as its code and message, then each
// google.rpc.BadRequest field violation on its own line, and an ErrorInfo's reason and a
// RetryInfo's delay (a ResourceExhausted says which limit, and when to try again).
func printError(w io.Writer, err error) { printErrorOf(w, "", err) }

// printErrorOf is printError with what failed (a target) before the message.
func printErrorOf(w io.Writer, what string, err error) {
	st, ok := status.FromError(err)
	if !ok {
		fmt.Fprintf(w, "hpactl: %s%v\n", what, err)
		return
	}
	fmt.Fprintf(w, "hpactl: %s%s: %s\n", what, st.Code(), st.Message())
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				fmt.Fprintf(w, "  %s: %s\n", v.GetField(), v.GetDescription())
			}
		case *errdetails.ErrorInfo:
			fmt.Fprintf(w, "  reason: %s (%s)\n", d.GetReason(), d.GetDomain())
		case *errdetails.RetryInfo:
			fmt.Fprintf(w, "  retry after: %s\n", d.GetRetryDelay().AsDuration().Round(time.Millisecond))
		}
	}
}

// writeJSON writes m in the API's JSON (protojson, lowerCamelCase, zero values omitted).
func writeJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// targetString is cluster/namespace/name, or namespace/name when the cluster is empty (the
// server's default cluster).
func targetString(t *pb.TargetRef) string {
	s := t.GetNamespace() + "/" + t.GetName()
	if c := t.GetCluster(); c != "" {
		s = c + "/" + s
	}
	return s
}

func timeString(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

// writeDecision prints a RecommendResponse for a person.
func writeDecision(w io.Writer, target *pb.TargetRef, spec *pb.HorizontalPodAutoscalerSpec, r *pb.RecommendResponse) {
	tw := newTable(w)
	if target != nil {
		fmt.Fprintf(tw, "Target:\t%s\n", targetString(target))
	}
	fmt.Fprintf(tw, "Desired replicas:\t%d (current %d)\n", r.GetDesiredReplicas(), r.GetCurrentReplicas())
	scale := "no"
	if r.GetScale() {
		scale = "yes"
	}
	fmt.Fprintf(tw, "Scale:\t%s\n", scale)
	if id := r.GetRecommendationId(); id != "" {
		fmt.Fprintf(tw, "Recommendation id:\t%s\n", id)
	}
	if r.GetDecisionTime() != nil {
		fmt.Fprintf(tw, "Decided at:\t%s\n", timeString(r.GetDecisionTime()))
	}
	ex := r.GetExplanation()
	fmt.Fprintf(tw, "Explanation:\t%s\n", ex.GetMessage())
	fmt.Fprintf(tw, "Stages:\t%s\n", stagesString(ex))
	tw.Flush()
	writeConditions(w, r.GetConditions())
	writeMetrics(w, spec, r.GetCurrentMetrics(), ex)
}

// stagesString is the replica count after each stage of the decision.
func stagesString(ex *pb.Explanation) string {
	s := fmt.Sprintf("proposal %d", ex.GetProposal())
	if wm := ex.GetWinningMetric(); wm >= 0 && len(ex.GetMetrics()) > 1 {
		s += fmt.Sprintf(" (metric %d)", wm)
	}
	s += fmt.Sprintf(" -> stabilized %d", ex.GetStabilized())
	if w := ex.GetStabilizationWindow(); w != nil {
		s += fmt.Sprintf(" (window %s)", w.AsDuration())
	}
	s += fmt.Sprintf(" -> limited %d", ex.GetLimited())
	if p := ex.GetLimitingPolicy(); p != "" {
		s += fmt.Sprintf(" (%s)", p)
	} else if r := ex.GetLimitReason(); r != "" {
		s += fmt.Sprintf(" (%s)", r)
	}
	return s + fmt.Sprintf(" -> final %d", ex.GetFinal())
}

func writeConditions(w io.Writer, cs []*pb.Condition) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nConditions:")
	tw := newTable(w)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range cs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage())
	}
	tw.Flush()
}

func writeMetrics(w io.Writer, spec *pb.HorizontalPodAutoscalerSpec, current []*pb.MetricStatus, ex *pb.Explanation) {
	if len(ex.GetMetrics()) == 0 && len(current) == 0 {
		return
	}
	fmt.Fprintln(w, "\nMetrics:")
	tw := newTable(w)
	fmt.Fprintln(tw, "  #\tNAME\tCURRENT\tTARGET\tRATIO\tPROPOSAL\tREADY\tIGNORED\tMISSING\tUNREADY\tERROR")
	for i, m := range ex.GetMetrics() {
		var cur *pb.MetricStatus
		if i < len(current) {
			cur = current[i]
		}
		var ms *pb.MetricSpec
		if i < len(spec.GetMetrics()) {
			ms = spec.GetMetrics()[i]
		}
		ratio, proposal := "-", "-"
		if m.GetError() == "" {
			ratio = strconv.FormatFloat(m.GetUsageRatio(), 'f', 3, 64)
			proposal = strconv.Itoa(int(m.GetProposal()))
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", m.GetIndex(), m.GetName(), currentString(cur), targetSpecString(ms),
			ratio, proposal, m.GetReadyPods(), m.GetIgnoredPods(), m.GetMissingPods(), m.GetUnreadyPods(), dash(m.GetError()))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// currentString formats a currentMetrics entry: "90%", "450m/pod", "12".
func currentString(m *pb.MetricStatus) string {
	var v *pb.MetricValueStatus
	switch {
	case m.GetResource() != nil:
		v = m.GetResource().GetCurrent()
	case m.GetContainerResource() != nil:
		v = m.GetContainerResource().GetCurrent()
	case m.GetPods() != nil:
		v = m.GetPods().GetCurrent()
	case m.GetObject() != nil:
		v = m.GetObject().GetCurrent()
	case m.GetExternal() != nil:
		v = m.GetExternal().GetCurrent()
	default:
		return "-"
	}
	return valueString(v.AverageUtilization, v.AverageValue, v.Value)
}

// targetSpecString formats a metric's target: "60%", "500m/pod", "100".
func targetSpecString(m *pb.MetricSpec) string {
	t := metricTarget(m)
	if t == nil {
		return "-"
	}
	return valueString(t.AverageUtilization, t.AverageValue, t.Value)
}

func valueString(util *int32, avg, value *string) string {
	var parts []string
	if util != nil {
		parts = append(parts, fmt.Sprintf("%d%%", *util))
	}
	if avg != nil {
		parts = append(parts, *avg+"/pod")
	}
	if value != nil {
		parts = append(parts, *value)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// metricTarget is the target of the source m's type names.
func metricTarget(m *pb.MetricSpec) *pb.MetricTarget {
	switch m.GetType() {
	case "Resource":
		return m.GetResource().GetTarget()
	case "ContainerResource":
		return m.GetContainerResource().GetTarget()
	case "Pods":
		return m.GetPods().GetTarget()
	case "Object":
		return m.GetObject().GetTarget()
	case "External":
		return m.GetExternal().GetTarget()
	}
	return nil
}
