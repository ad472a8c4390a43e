package hpactl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// The simulate command replays a load trace against a HorizontalPodAutoscaler spec.
//
// The pods: one per replica. The initial pods started an hour before the first row and are
// ready. A scale-up at a row creates pods at that row's time (their startTime); they are
// Running but not Ready until --startup has passed, then Ready. A scale-down removes unready
// pods first, then the newest. Each row is one reconcile: every ready pod reports
// demand / (ready pods) of the first metric; unready pods report nothing (the engine counts
// them as missing or unready, as upstream does).
//
// The first metric decides what a sample is:
//   - Resource, ContainerResource, Pods: a per-pod sample, in the metric's units (CPU cores,
//     bytes, requests/s). Utilization is that usage over the pod's request, so every pod
//     carries the requests of --request (default: 1 of the first metric's resource, i.e.
//     1000m for cpu; 1Gi for memory) in one container ("app", or the ContainerResource's
//     container).
//   - Object: the value is the demand. External: one value, the demand.
//
// Every other metric gets the observation error "not in trace", so it is invalid at every
// step and only the first metric drives the decision.
//
// The controller decides every --sync-period (default 15s, upstream's default), from the first
// row's time to the last row's, on the demand of the latest row at or before that instant (see
// syncTicks); "row" below means such a decision instant. Each is one Simulate call carrying the
// previous call's history, since the pods of a row depend on the previous decision. The remote (server) and --local paths make the same calls.

// notInTrace is the observation error of every metric but the first.
const notInTrace = "not in trace"

// simulateFunc is the Simulate RPC, answered by a server or in process.
type simulateFunc func(context.Context, *pb.SimulateRequest) (*pb.SimulateResponse, error)

// simConfig describes one simulation.
type simConfig struct {
	spec            *pb.HorizontalPodAutoscalerSpec
	startup         time.Duration
	initialReplicas int32
	// requests are each pod's container requests (resource name -> quantity).
	requests map[string]resource.Quantity
	// options are every request's options (nil: the server's defaults).
	options *pb.Options
	// container names the pods' one container (empty: the first metric's, else "app").
	container string
}

// simStep is one row's outcome.
type simStep struct {
	row                     traceRow
	current, desired, ready int32
	perPodMilli             int64    // demand / ready pods (0 without ready pods)
	utilization             *float64 // percent of the request, for a Resource/ContainerResource first metric
	capacityMilli           *float64 // replicas * target per pod, in milli-units; nil when undefined
	result                  *pb.SimulateStepResult
}

type simPod struct {
	name             string
	created, readyAt time.Time
}

// firstMetric is the metric the trace feeds: spec.metrics[0], or upstream's default (80%
// average CPU utilization) when the spec has none.
func firstMetric(spec *pb.HorizontalPodAutoscalerSpec) *pb.MetricSpec {
	if ms := spec.GetMetrics(); len(ms) > 0 {
		return ms[0]
	}
	return &pb.MetricSpec{Type: "Resource", Resource: &pb.ResourceMetricSource{
		Name: "cpu", Target: &pb.MetricTarget{Type: "Utilization", AverageUtilization: proto.Int32(80)},
	}}
}

// resourceOf is the resource name and container of a Resource or ContainerResource metric.
func resourceOf(m *pb.MetricSpec) (name, container string, ok bool) {
	switch m.GetType() {
	case "Resource":
		return m.GetResource().GetName(), "app", true
	case "ContainerResource":
		return m.GetContainerResource().GetName(), m.GetContainerResource().GetContainer(), true
	}
	return "", "", false
}

// defaultRequest is the request --request defaults to for a resource.
func defaultRequest(name string) resource.Quantity {
	if name == "memory" {
		return resource.MustParse("1Gi")
	}
	return resource.MustParse("1")
}

// runSimulation replays rows, one Simulate call per row.
func runSimulation(ctx context.Context, simulate simulateFunc, cfg simConfig, rows []traceRow) ([]simStep, *pb.History, error) {
	first := firstMetric(cfg.spec)
	resName, container, isResource := resourceOf(first)
	if !isResource {
		container = "app"
	}
	if cfg.container != "" {
		container = cfg.container
	}
	requests := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(cfg.requests)) {
		q := cfg.requests[k]
		requests[k] = q.String()
	}
	var requestMilli int64
	if isResource {
		q, ok := cfg.requests[resName]
		if !ok {
			q = defaultRequest(resName)
			requests[resName] = q.String()
		}
		requestMilli = q.MilliValue()
	}

	seq := 0
	newPod := func(created time.Time) simPod {
		seq++
		return simPod{name: fmt.Sprintf("pod-%d", seq), created: created, readyAt: created.Add(cfg.startup)}
	}
	var pods []simPod
	for range cfg.initialReplicas {
		pods = append(pods, newPod(rows[0].time.Add(-time.Hour)))
	}

	var history *pb.History
	steps := make([]simStep, 0, len(rows))
	for _, row := range rows {
		current := int32(len(pods))
		var podStates []*pb.PodState
		var readyPods []string
		for _, p := range pods {
			ready := !row.time.Before(p.readyAt)
			ps := &pb.PodState{
				Name: p.name, Phase: "Running", Ready: proto.Bool(ready),
				StartTime: timestamppb.New(p.created),
			}
			if ready {
				ps.ReadyTransitionTime = timestamppb.New(p.readyAt)
				readyPods = append(readyPods, p.name)
			} else {
				ps.ReadyTransitionTime = timestamppb.New(p.created)
			}
			if len(requests) > 0 {
				ps.Containers = []*pb.ContainerState{{Name: container, Requests: requests}}
			}
			podStates = append(podStates, ps)
		}
		st := simStep{row: row, current: current, ready: int32(len(readyPods))}
		if st.ready > 0 {
			st.perPodMilli = row.demand / int64(st.ready)
		}
		metrics := []*pb.MetricObservation{observation(first, row.time, row.demand, st.perPodMilli, readyPods)}
		for i := 1; i < len(cfg.spec.GetMetrics()); i++ {
			metrics = append(metrics, rowObservation(cfg.spec.GetMetrics()[i], row, i, readyPods))
		}
		if len(row.metrics) > 0 && row.metrics[0].err != "" {
			metrics[0] = &pb.MetricObservation{Error: row.metrics[0].err}
		}
		req := &pb.SimulateRequest{
			Spec:            cfg.spec,
			Options:         cfg.options,
			InitialReplicas: current,
			History:         history,
			Steps: []*pb.SimulateStep{{
				Time:            timestamppb.New(row.time),
				CurrentReplicas: proto.Int32(current),
				Pods:            podStates,
				Metrics:         metrics,
			}},
		}
		resp, err := simulate(ctx, req)
		if err != nil {
			return nil, nil, fmt.Errorf("simulate the row at %s: %w", row.time.Format(time.RFC3339), err)
		}
		if len(resp.GetSteps()) != 1 {
			return nil, nil, fmt.Errorf("simulate the row at %s: got %d step results, want 1", row.time.Format(time.RFC3339), len(resp.GetSteps()))
		}
		history = resp.GetHistory()
		st.result = resp.GetSteps()[0]
		st.desired = st.result.GetDesiredReplicas()
		if isResource && requestMilli > 0 && metricTarget(first).GetType() == "Utilization" {
			u := float64(st.perPodMilli) * 100 / float64(requestMilli)
			st.utilization = &u
		}
		st.capacityMilli = capacityAtTarget(first, current, requestMilli)
		steps = append(steps, st)

		// Apply the decision: the scale write succeeds at this row's time.
		switch d := int(st.desired); {
		case d > len(pods):
			for range d - len(pods) {
				pods = append(pods, newPod(row.time))
			}
		case d < len(pods):
			// Unready pods go first, then the newest, as a ReplicaSet picks.
			slices.SortStableFunc(pods, func(a, b simPod) int {
				ra, rb := !row.time.Before(a.readyAt), !row.time.Before(b.readyAt)
				if ra != rb {
					if ra {
						return -1
					}
					return 1
				}
				return a.created.Compare(b.created)
			})
			pods = pods[:d]
		}
	}
	return steps, history, nil
}

// rowObservation is the observation of metric i (not the first) of the spec at a row: its
// demand spread over the ready pods, or "not in trace" when the trace has only the first.
func rowObservation(m *pb.MetricSpec, row traceRow, i int, readyPods []string) *pb.MetricObservation {
	if i >= len(row.metrics) {
		return &pb.MetricObservation{Error: notInTrace}
	}
	d := row.metrics[i]
	if d.err != "" {
		return &pb.MetricObservation{Error: d.err}
	}
	var perPod int64
	if len(readyPods) > 0 {
		perPod = d.milli / int64(len(readyPods))
	}
	return observation(m, row.time, d.milli, perPod, readyPods)
}

// observation is a metric's observation of demand (milli-units) at a time: the value of an
// Object or External metric, else a sample of perPodMilli from each ready pod.
func observation(m *pb.MetricSpec, at time.Time, demand, perPodMilli int64, readyPods []string) *pb.MetricObservation {
	switch m.GetType() {
	case "Object":
		v := milliString(demand)
		return &pb.MetricObservation{Value: &v}
	case "External":
		return &pb.MetricObservation{Values: []string{milliString(demand)}}
	}
	obs := &pb.MetricObservation{}
	for _, name := range readyPods {
		obs.PodValues = append(obs.PodValues, &pb.PodMetricValue{Pod: name, Value: milliString(perPodMilli), Timestamp: timestamppb.New(at)})
	}
	return obs
}

// capacityAtTarget is the demand the current replicas serve at the target, in milli-units:
// replicas * request * utilization for a Utilization target, replicas * averageValue for an
// AverageValue target, the value itself for a Value target (an Object or External total).
func capacityAtTarget(m *pb.MetricSpec, replicas int32, requestMilli int64) *float64 {
	t := metricTarget(m)
	var c float64
	switch {
	case t.GetType() == "Utilization" && t.AverageUtilization != nil:
		c = float64(replicas) * float64(requestMilli) * float64(*t.AverageUtilization) / 100
	case t.GetType() == "AverageValue" && t.AverageValue != nil:
		q, err := resource.ParseQuantity(*t.AverageValue)
		if err != nil {
			return nil
		}
		c = float64(replicas) * float64(q.MilliValue())
	case t.GetType() == "Value" && t.Value != nil:
		q, err := resource.ParseQuantity(*t.Value)
		if err != nil {
			return nil
		}
		c = float64(q.MilliValue())
	default:
		return nil
	}
	return &c
}

func milliString(m int64) string { return resource.NewMilliQuantity(m, resource.DecimalSI).String() }

// requestFlag is --request resource=quantity, repeatable or comma-separated.
type requestFlag map[string]resource.Quantity

func (r requestFlag) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r)) {
		q := r[k]
		parts = append(parts, k+"="+q.String())
	}
	return strings.Join(parts, ",")
}

func (r requestFlag) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" {
			return fmt.Errorf("want resource=quantity, e.g. cpu=500m; got %q", part)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		if q.Sign() <= 0 {
			return fmt.Errorf("%s: the request must be positive", k)
		}
		r[k] = q
	}
	return nil
}

func (a *App) simulate(ctx context.Context, args []string) error {
	fs := a.newFlagSet("simulate")
	file := fs.String("f", "", "HorizontalPodAutoscaler manifests (autoscaling/v2 or v1, YAML or JSON; several documents are each simulated; - reads standard input)")
	name := fs.String("name", "", "the autoscaler of the file to simulate (default: each)")
	tracePath := fs.String("trace", "", "load trace: CSV with header time,demand (time: seconds or a duration such as 1m30s from the start, or RFC 3339; demand: the first metric's total across pods, a quantity)")
	syncPeriod := fs.Duration("sync-period", 15*time.Second, "the controller's period: a decision every period from the trace's first row to its last, on the demand of the latest row")
	startup := fs.Duration("startup", 30*time.Second, "time from a pod's creation to Ready")
	initial := &initialReplicasFlag{}
	fs.Var(initial, "initial-replicas", "replicas at the first row, an `int` (default: the spec's minReplicas, else 1)")
	requests := requestFlag{}
	fs.Var(requests, "request", "each pod's request, `resource=quantity`, repeatable (default: 1 of the first metric's resource: cpu=1, memory=1Gi)")
	plotPath := fs.String("plot", "", "write a chart of demand, capacity at target, replicas and per-pod utilization (.png or .svg)")
	useLocal := fs.Bool("local", false, "replay in process with the recommender package, without a server (--history still reads the log from the server)")
	historyOf := fs.String("history", "", "replay the decision log of the target `NAMESPACE/NAME` under -f's spec instead of a --trace")
	cluster := fs.String("cluster", "", "with --history: the cluster of the target (default: the server's default cluster)")
	var since historyFlags
	registerSince(fs, &since)
	versions := registerVersions(fs, 2)
	out := registerOutput(fs)
	conn := a.registerConn(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *historyOf != "" {
		if *tracePath != "" {
			return errors.New("simulate takes --trace or --history, not both")
		}
		if len(versions.list) > 1 {
			return errors.New("--history takes one --kubernetes-version")
		}
		opts := replayOptions{file: *file, name: *name, target: *historyOf, cluster: *cluster, since: since,
			startup: *startup, plot: *plotPath, json: *out == "json", local: *useLocal}
		if len(versions.list) == 1 {
			opts.options = versionOptions(versions.list[0])
		}
		return a.simulateHistory(ctx, fs, conn, opts)
	}
	if *cluster != "" || since.since != 0 {
		return errors.New("--cluster and --since go with --history")
	}
	if *file == "" || *tracePath == "" {
		return errors.New("simulate needs -f hpa.yaml and --trace load.csv (or --history NAMESPACE/NAME)")
	}
	if len(versions.list) > 1 && (*plotPath != "" || *out == "json") {
		return errors.New("--plot and --output json take one --kubernetes-version")
	}
	if *startup < 0 {
		return errors.New("--startup must not be negative")
	}
	if *plotPath != "" {
		if _, err := plotFormat(*plotPath); err != nil {
			return err
		}
	}
	ms, err := loadManifests(*file, *name, a.Stderr)
	if err != nil {
		return err
	}
	if *plotPath != "" && len(ms) > 1 {
		return fmt.Errorf("--plot draws one autoscaler and manifest %s holds %d: pick one with --name", *file, len(ms))
	}
	rows, err := loadTrace(*tracePath)
	if err != nil {
		return err
	}
	ticks, err := syncTicks(rows, *syncPeriod)
	if err != nil {
		return err
	}
	var sim simulateFunc
	if *useLocal {
		sim = a.Local.Simulate
	} else {
		c, err := conn.dial(fs)
		if err != nil {
			return err
		}
		defer c.Close()
		sim = func(ctx context.Context, req *pb.SimulateRequest) (*pb.SimulateResponse, error) {
			return c.Simulate(ctx, req)
		}
	}
	refs := make([]*pb.TargetRef, len(ms))
	for i, m := range ms {
		refs[i] = &pb.TargetRef{Namespace: m.namespace, Name: m.name}
	}
	return a.forEach(refs, func(i int) error {
		m := ms[i]
		cfg := simConfig{spec: m.spec, startup: *startup, requests: requests, initialReplicas: initial.orDefault(m.spec)}
		if len(versions.list) == 2 {
			runs := make([][]simStep, 2)
			for j, v := range versions.list {
				cfg.options = versionOptions(v)
				var err error
				if runs[j], _, err = runSimulation(ctx, sim, cfg, ticks); err != nil {
					return fmt.Errorf("simulate as Kubernetes %s: %w", v, err)
				}
			}
			if len(ms) > 1 {
				if i > 0 {
					fmt.Fprintln(a.Stdout)
				}
				fmt.Fprintf(a.Stdout, "%s/%s:\n", m.namespace, m.name)
			}
			return writeSideBySide(a.Stdout, versions.list, runs)
		}
		if len(versions.list) == 1 {
			cfg.options = versionOptions(versions.list[0])
		}
		steps, history, err := runSimulation(ctx, sim, cfg, ticks)
		if err != nil {
			return err
		}
		if *plotPath != "" {
			if err := writePlot(*plotPath, m, steps); err != nil {
				return err
			}
		}
		if *out == "json" {
			resp := &pb.SimulateResponse{History: history}
			for _, s := range steps {
				resp.Steps = append(resp.Steps, s.result)
			}
			return writeJSON(a.Stdout, resp)
		}
		if len(ms) > 1 {
			if i > 0 {
				fmt.Fprintln(a.Stdout)
			}
			fmt.Fprintf(a.Stdout, "%s/%s:\n", m.namespace, m.name)
		}
		writeSimulation(a.Stdout, steps)
		if *plotPath != "" {
			fmt.Fprintf(a.Stdout, "\nwrote %s\n", *plotPath)
		}
		return nil
	})
}

// initialReplicasFlag is --initial-replicas: unset, the spec's minReplicas, else 1.
type initialReplicasFlag struct {
	n   int32
	set bool
}

func (f *initialReplicasFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.Itoa(int(f.n))
}

func (f *initialReplicasFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return errors.New("must be a replica count (a non-negative integer)")
	}
	f.n, f.set = int32(n), true
	return nil
}

func (f *initialReplicasFlag) orDefault(spec *pb.HorizontalPodAutoscalerSpec) int32 {
	switch {
	case f.set:
		return f.n
	case spec.MinReplicas != nil:
		return *spec.MinReplicas
	}
	return 1
}

// writeSimulation prints one line per row.
func writeSimulation(w io.Writer, steps []simStep) {
	tw := newTable(w)
	fmt.Fprintln(tw, "TIME\tDEMAND\tCURRENT\tDESIRED\tREADY\tPER POD\tUTIL\tEXPLANATION")
	start := steps[0].row.time
	for _, s := range steps {
		util := "-"
		if s.utilization != nil {
			util = fmt.Sprintf("%d%%", int64(*s.utilization)) // truncated, as the HPA reports utilization
		}
		perPod := "-"
		if s.ready > 0 {
			perPod = milliString(s.perPodMilli)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", s.row.time.Sub(start), milliString(s.row.demand),
			s.current, s.desired, s.ready, perPod, util, s.result.GetExplanation().GetMessage())
	}
	tw.Flush()
}
