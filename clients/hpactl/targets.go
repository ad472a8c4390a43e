package hpactl

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// targetRef reads -f and the target flags.
func targetRef(t *targetFlags) (*pb.TargetRef, error) {
	var m *manifest
	if t.file != "" {
		var err error
		if m, err = loadManifest(t.file); err != nil {
			return nil, err
		}
	}
	return t.ref(m)
}

func (a *App) get(ctx context.Context, args []string) error {
	fs := a.newFlagSet("get")
	var t targetFlags
	registerTarget(fs, &t, true)
	out := registerOutput(fs)
	conn := a.registerConn(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	ref, err := targetRef(&t)
	if err != nil {
		return err
	}
	c, err := conn.dial(fs)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.GetTarget(ctx, &pb.GetTargetRequest{Target: ref})
	if err != nil {
		return err
	}
	if *out == "json" {
		return writeJSON(a.Stdout, resp)
	}
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
	return nil
}

func (a *App) list(ctx context.Context, args []string) error {
	fs := a.newFlagSet("list")
	cluster := fs.String("cluster", "", "only targets of this cluster (empty: every cluster you may read)")
	namespace := fs.String("namespace", "", "only targets of this namespace (needs --cluster)")
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
			referenceString(sp), targetsString(sp, current), minPodsString(sp), sp.GetMaxReplicas(), replicas, age(t.GetLastSeen(), now))
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
	ref, err := targetRef(&t)
	if err != nil {
		return err
	}
	c, err := conn.dial(fs)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.DeleteTarget(ctx, &pb.DeleteTargetRequest{Target: ref}); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "deleted %s\n", targetString(ref))
	return nil
}
