package hpactl

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

func (a *App) get(ctx context.Context, args []string) error {
	return a.showTargets(ctx, "get", args, a.writeTarget)
}

// showTargets is get and describe: it fetches each target the flags name (or the file's
// autoscalers) and prints it with write, or as JSON with --output json.
func (a *App) showTargets(ctx context.Context, cmd string, args []string, write func(*pb.GetTargetResponse)) error {
	fs := a.newFlagSet(cmd)
	var t targetFlags
	registerTarget(fs, &t, true)
	out := registerOutput(fs)
	conn := a.registerConn(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	refs, _, err := t.targets(a.Stderr)
	if err != nil {
		return err
	}
	c, err := conn.dial(fs)
	if err != nil {
		return err
	}
	defer c.Close()
	return a.forEach(refs, func(i int) error {
		resp, err := c.GetTarget(ctx, &pb.GetTargetRequest{Target: refs[i]})
		if err != nil {
			return err
		}
		if *out == "json" {
			return writeJSON(a.Stdout, resp)
		}
		if i > 0 {
			fmt.Fprintln(a.Stdout)
		}
		write(resp)
		return nil
	})
}

// writeTarget prints one target's stored state.
func (a *App) writeTarget(resp *pb.GetTargetResponse) {
	tw := newTable(a.Stdout)
	fmt.Fprintf(tw, "Target:\t%s\n", targetString(resp.GetTarget()))
	fmt.Fprintf(tw, "Last seen:\t%s\n", timeString(resp.GetLastSeen()))
	if sp := resp.GetSpec(); sp != nil {
		min := int32(1)
		if sp.MinReplicas != nil {
			min = *sp.MinReplicas
		}
		fmt.Fprintf(tw, "Replicas:\tmin %d, max %d, %d metric(s), behavior %v\n", min, sp.GetMaxReplicas(), len(sp.GetMetrics()), sp.GetBehavior() != nil)
	}
	h := resp.GetHistory()
	fmt.Fprintf(tw, "History:\t%d recommendation(s), %d scale-up and %d scale-down event(s), scaled to zero %v\n",
		len(h.GetRecommendations()), len(h.GetScaleUpEvents()), len(h.GetScaleDownEvents()), h.GetScaledToZero())
	fmt.Fprintf(tw, "Pending decisions:\t%d\n", len(resp.GetPendingDecisions()))
	for _, p := range resp.GetPendingDecisions() {
		fmt.Fprintf(tw, "\t%s at %s: %d -> %d\n", p.GetRecommendationId(), timeString(p.GetTime()), p.GetCurrentReplicas(), p.GetDesiredReplicas())
	}
	tw.Flush()
	if ld := resp.GetLastDecision(); ld != nil {
		fmt.Fprintln(a.Stdout, "\nLast decision:")
		writeDecision(a.Stdout, nil, resp.GetSpec(), ld.GetResponse())
	} else {
		writeConditions(a.Stdout, resp.GetConditions())
	}
}

func (a *App) list(ctx context.Context, args []string) error {
	fs := a.newFlagSet("list")
	cluster := fs.String("cluster", "", "only targets of this cluster (default: every cluster you may read; with --namespace, the server's default cluster)")
	namespace := fs.String("namespace", "", "only targets of this namespace")
	limit := fs.Int("limit", 0, "print at most this many targets (0: all; every page is fetched)")
	out := registerOutput(fs)
	conn := a.registerConn(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *limit < 0 {
		return errors.New("--limit must not be negative")
	}
	c, err := conn.dial(fs)
	if err != nil {
		return err
	}
	defer c.Close()
	req := &pb.ListTargetsRequest{Cluster: *cluster, Namespace: *namespace}
	if *limit > 0 && *limit < 1000 {
		req.PageSize = int32(*limit)
	}
	targets, err := c.ListAllTargets(ctx, req, *limit)
	if err != nil {
		return err
	}
	if *out == "json" {
		return writeJSON(a.Stdout, &pb.ListTargetsResponse{Targets: targets})
	}
	// The columns of `kubectl get hpa` need each target's spec and last metrics, which only
	// GetTarget returns.
	now := a.now()
	tw := newTable(a.Stdout)
	fmt.Fprintln(tw, "CLUSTER\tNAMESPACE\tNAME\tREFERENCE\tTARGETS\tMINPODS\tMAXPODS\tREPLICAS\tAGE")
	for _, sum := range targets {
		t, err := c.GetTarget(ctx, &pb.GetTargetRequest{Target: sum.GetTarget()})
		if status.Code(err) == codes.NotFound {
			continue // deleted since the listing
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", targetString(sum.GetTarget()), err)
		}
		r := t.GetTarget()
		sp := t.GetSpec()
		var current []*pb.MetricStatus
		if ld := t.GetLastDecision(); ld != nil {
			current = ld.GetResponse().GetCurrentMetrics()
		}
		replicas, _ := replicasOf(t)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.GetCluster(), r.GetNamespace(), r.GetName(),
			referenceString(sp), targetsString(sp, current), minPodsString(sp), sp.GetMaxReplicas(), replicas, age(t.GetFirstSeen(), now))
	}
	return tw.Flush()
}

func (a *App) delete(ctx context.Context, args []string) error {
	fs := a.newFlagSet("delete")
	var t targetFlags
	registerTarget(fs, &t, true)
	conn := a.registerConn(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	refs, _, err := t.targets(a.Stderr)
	if err != nil {
		return err
	}
	c, err := conn.dial(fs)
	if err != nil {
		return err
	}
	defer c.Close()
	return a.forEach(refs, func(i int) error {
		if _, err := c.DeleteTarget(ctx, &pb.DeleteTargetRequest{Target: refs[i]}); err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "deleted %s\n", targetString(refs[i]))
		return nil
	})
}
