package hpactl_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
)

// historyHPA scales on memory utilization (no CPU start-up rules) and a queue's length, with
// a scale-up policy of 2 pods a minute and a 2-minute scale-down window, so its log holds
// scales, runs held by the policy and by the window, and runs that change nothing.
const historyHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource:
      name: memory
      target: {type: Utilization, averageUtilization: 60}
  - type: External
    external:
      metric: {name: queue_length}
      target: {type: Value, value: 100}
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      policies:
      - {type: Pods, value: 2, periodSeconds: 60}
    scaleDown:
      stabilizationWindowSeconds: 120
`

// historyStart is when the driven target's first decision is made.
var historyStart = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// historySpan and historyPeriod: a decision every 15 s for 30 minutes.
const (
	historySpan   = 30 * time.Minute
	historyPeriod = 15 * time.Second
)

// historyNow is hpactl's clock in these tests: 12 s after the last decision.
var historyNow = historyStart.Add(historySpan + 12*time.Second)

// load is the memory the pods use in total (bytes; each pod requests 1000) and the queue's
// length at an offset from the start.
func load(at time.Duration) (memory, queue int64) {
	switch {
	case at < 5*time.Minute:
		return 1200, 20 // 60% on 2 pods: no change
	case at < 12*time.Minute:
		return 4800, 20 // 8 pods' worth: up 2 a minute
	case at < 20*time.Minute:
		return 2400, 20 // 4 pods' worth: down after the window
	case at < 25*time.Minute:
		return 900, 20 // the minimum
	}
	return 900, 400 // the queue wants 8
}

// driveHistory runs a real server on loopback whose clock the test sets, and fills the log of
// shop/web (historyHPA) with a decision every historyPeriod over historySpan: real Recommend
// calls from pods that all report a sample (so pod readiness shapes no decision), each scale
// reported successful and applied at once. It returns the server's address.
func driveHistory(t *testing.T) string {
	t.Helper()
	var now atomic.Pointer[time.Time]
	now.Store(&historyStart)
	cfg := server.DefaultConfig()
	cfg.DecisionLogBytes = 1 << 20
	addr, _ := servertest.Start(t, cfg, server.Deps{Now: func() time.Time { return *now.Load() }})
	hpa := writeFile(t, "hpa.yaml", historyHPA)
	target := &pb.TargetRef{Namespace: "shop", Name: "web"}
	var pods []string
	seq := 0
	addPod := func() { seq++; pods = append(pods, fmt.Sprintf("web-%d", seq)) }
	addPod()
	addPod()
	obsPath := filepath.Join(t.TempDir(), "obs.json")
	for at := time.Duration(0); at <= historySpan; at += historyPeriod {
		ts := historyStart.Add(at)
		now.Store(&ts)
		memory, queue := load(at)
		obs := map[string]any{"currentReplicas": len(pods)}
		var podStates []map[string]any
		var values []map[string]string
		for _, p := range pods {
			podStates = append(podStates, map[string]any{
				"name": p, "phase": "Running", "ready": true,
				"startTime": "2026-06-01T10:00:00Z", "readyTransitionTime": "2026-06-01T10:00:20Z",
				"containers": []any{map[string]any{"name": "app", "requests": map[string]string{"memory": "1000"}}},
			})
			values = append(values, map[string]string{"pod": p, "value": strconv.FormatInt(memory*1000/int64(len(pods)), 10) + "m",
				"timestamp": ts.Format(time.RFC3339)})
		}
		obs["pods"] = podStates
		obs["metrics"] = []any{map[string]any{"podValues": values}, map[string]any{"values": []string{strconv.FormatInt(queue, 10)}}}
		b, err := json.Marshal(obs)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(obsPath, b, 0o600); err != nil {
			t.Fatal(err)
		}
		r := run(t, addr, "recommend", "-o", "json", "-f", hpa, "--observations", obsPath)
		mustOK(t, r)
		resp := decodeRecommend(t, r.stdout)
		if resp.GetRecommendationId() == "" {
			continue
		}
		reportScale(t, addr, target, resp.GetRecommendationId(), true)
		for len(pods) < int(resp.GetDesiredReplicas()) {
			addPod()
		}
		pods = pods[:resp.GetDesiredReplicas()]
	}
	return addr
}

// runAt runs hpactl against addr with its clock at historyNow.
func runAt(t *testing.T, addr string, args ...string) result {
	t.Helper()
	return runClock(t, addr, historyNow, historyNow, args...)
}

// loggedEntries is the target's whole log as the API returns it, newest first.
func loggedEntries(t *testing.T, addr string, since time.Duration) []*pb.DecisionLogEntry {
	t.Helper()
	c, err := goclient.New(addr, goclient.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := &pb.ListDecisionsRequest{Target: &pb.TargetRef{Namespace: "shop", Name: "web"}}
	if since > 0 {
		req.Since = timestamppb.New(historyNow.Add(-since))
	}
	entries, err := c.ListAllDecisions(t.Context(), req, 0)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// tableRows are the lines of a table after its header, squashed.
func tableRows(t *testing.T, out, header string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		if squash(l) == header {
			var rows []string
			for _, r := range lines[i+1:] {
				if strings.TrimSpace(r) == "" {
					break
				}
				rows = append(rows, squash(r))
			}
			return rows
		}
	}
	t.Fatalf("no header %q in:\n%s", header, out)
	return nil
}

func TestHistory(t *testing.T) {
	addr := driveHistory(t)
	entries := loggedEntries(t, addr, 0)
	if len(entries) < 8 {
		t.Fatalf("the driven log holds %d entries; want the scales and runs of the load", len(entries))
	}
	const header = "LAST SEEN TYPE REASON REPLICAS OUTCOME MESSAGE"

	t.Run("text", func(t *testing.T) {
		r := runAt(t, addr, "history", "--namespace", "shop", "--name", "web")
		mustOK(t, r)
		rows := tableRows(t, r.stdout, header)
		if len(rows) != len(entries) {
			t.Fatalf("%d rows for %d entries:\n%s", len(rows), len(entries), r.stdout)
		}
		// Oldest first, as kubectl sorts events: row i is entry n-1-i.
		for i, row := range rows {
			e := entries[len(entries)-1-i]
			replicas := fmt.Sprintf(" %d -> %d ", e.GetCurrentReplicas(), e.GetDesiredReplicas())
			if !strings.Contains(row, replicas) || !strings.HasSuffix(row, squash(e.GetMessage())) {
				t.Errorf("row %d %q; want %q and the message %q", i, row, replicas, e.GetMessage())
			}
			if e.GetCount() > 1 && !strings.Contains(row, fmt.Sprintf("(x%d over ", e.GetCount())) {
				t.Errorf("row %d %q: a run of %d without kubectl's (xN over AGE)", i, row, e.GetCount())
			}
		}
		// The first run: 20 decisions that changed nothing, 0 to 4m45s, seen 25m and 30m ago.
		if got, want := rows[0], "25m (x20 over 30m) Normal ValidMetricFound 2 -> 2 -"; !strings.HasPrefix(got, want) {
			t.Errorf("first row %q, want it to start with %q", got, want)
		}
		for _, want := range []string{
			"25m Normal SuccessfulRescale 2 -> 4 succeeded scale up 2 -> 4", // 5m: the policy's 2 pods
			"Normal ScaleUpLimit 4 -> 4 -",                                  // held by the policy until its minute passes
			"Normal ScaleDownStabilized 8 -> 8 -",                           // 12m: held by the 2-minute window
			"SuccessfulRescale 2 -> 4 succeeded",                            // 25m: the queue
		} {
			found := false
			for _, row := range rows {
				found = found || strings.HasPrefix(row, want) || strings.Contains(row, " "+want)
			}
			if !found {
				t.Errorf("no row like %q in:\n%s", want, r.stdout)
			}
		}
	})

	t.Run("since", func(t *testing.T) {
		r := runAt(t, addr, "history", "--namespace", "shop", "--name", "web", "--since", "6m")
		mustOK(t, r)
		rows := tableRows(t, r.stdout, header)
		want := loggedEntries(t, addr, 6*time.Minute)
		if len(rows) != len(want) || len(rows) == 0 || len(rows) >= len(entries) {
			t.Fatalf("--since 6m: %d rows, want %d (of %d):\n%s", len(rows), len(want), len(entries), r.stdout)
		}
		// Every row's last decision is within the 6 minutes: "5m58s", "6m" at most.
		age := regexp.MustCompile(`^(\d+m)?(\d+s)? `)
		for _, row := range rows {
			m := age.FindString(row)
			d, err := time.ParseDuration(strings.TrimSpace(m))
			if err != nil || d > 6*time.Minute {
				t.Errorf("row %q is older than --since 6m (%v)", row, err)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		r := runAt(t, addr, "history", "--namespace", "shop", "--name", "web", "-o", "json")
		mustOK(t, r)
		got := &pb.ListDecisionsResponse{}
		if err := protojson.Unmarshal([]byte(r.stdout), got); err != nil {
			t.Fatalf("not a ListDecisionsResponse: %v\n%s", err, r.stdout)
		}
		if diff := cmp.Diff(&pb.ListDecisionsResponse{Decisions: entries}, got, protocmp.Transform()); diff != "" {
			t.Errorf("json differs from ListDecisions (-want +got):\n%s", diff)
		}
	})

	t.Run("plot", func(t *testing.T) {
		dir := t.TempDir()
		pngPath, svgPath := filepath.Join(dir, "h.png"), filepath.Join(dir, "h.svg")
		r := runAt(t, addr, "history", "--namespace", "shop", "--name", "web", "--plot", pngPath)
		mustOK(t, r)
		if !strings.Contains(r.stdout, "wrote "+pngPath) {
			t.Errorf("stdout does not name the chart:\n%s", r.stdout)
		}
		img := decodePNG(t, pngPath)
		// 10 x 9 inches at 96 dpi: the replicas panel and one per metric, 3 inches each.
		if b := img.Bounds(); b.Dx() != 960 || b.Dy() != 864 {
			t.Errorf("PNG is %dx%d, want 960x864", b.Dx(), b.Dy())
		}
		mustOK(t, runAt(t, addr, "history", "--namespace", "shop", "--name", "web", "--plot", svgPath))
		b, err := os.ReadFile(svgPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`width="720pt"`, `height="648pt"`, "</svg>", "held: ScaleUpLimit", "held: ScaleDownStabilized", "proposal: memory"} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("SVG lacks %q", want)
			}
		}
	})

	t.Run("not found", func(t *testing.T) {
		r := runAt(t, addr, "history", "--namespace", "shop", "--name", "nope")
		if r.code != 1 || !strings.Contains(r.stderr, "NotFound") || !strings.Contains(r.stderr, "shop/nope") {
			t.Errorf("exit %d, stderr %q; want 1, NotFound and the target", r.code, r.stderr)
		}
		r = runAt(t, addr, "simulate", "--history", "shop/nope", "-f", writeFile(t, "hpa.yaml", historyHPA))
		if r.code != 1 || !strings.Contains(r.stderr, "NotFound") {
			t.Errorf("simulate --history: exit %d, stderr %q; want 1 and NotFound", r.code, r.stderr)
		}
	})
}

// replayTotals are the TOTAL table's rows: name -> [logged, replayed].
func replayTotals(t *testing.T, out string) map[string][2]string {
	t.Helper()
	got := map[string][2]string{}
	for _, row := range tableRows(t, out, "TOTAL LOGGED REPLAY") {
		f := strings.Fields(row)
		got[strings.Join(f[:len(f)-2], " ")] = [2]string{f[len(f)-2], f[len(f)-1]}
	}
	return got
}

var matchedLine = regexp.MustCompile(`Matched the logged decision at (\d+) of (\d+) compared steps \(([^)]*)\); (\d+) of (\d+) steps not compared`)

func TestSimulateHistory(t *testing.T) {
	addr := driveHistory(t)
	own := writeFile(t, "hpa.yaml", historyHPA)
	decisions := int(historySpan/historyPeriod) + 1

	t.Run("own spec reproduces the log", func(t *testing.T) {
		for _, mode := range [][]string{nil, {"--local"}} {
			r := runAt(t, addr, append([]string{"simulate", "--history", "shop/web", "-f", own, "--startup", "0s"}, mode...)...)
			mustOK(t, r)
			for _, want := range []string{
				fmt.Sprintf("(%d decisions)", decisions), "This is a model:", "spread evenly", "--startup (0s)",
			} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("%v: output lacks %q:\n%s", mode, want, r.stdout)
				}
			}
			m := matchedLine.FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("%v: no matched share in:\n%s", mode, r.stdout)
			}
			if m[1] != strconv.Itoa(decisions) || m[2] != m[1] || m[3] != "100.0%" || m[4] != "0" {
				t.Errorf("%v: %q; want all %d steps compared and matched", mode, m[0], decisions)
			}
			rows := tableRows(t, r.stdout, "TIME DEMAND LOGGED REPLAY MATCH REPLAY EXPLANATION")
			if len(rows) != decisions {
				t.Errorf("%v: %d step rows, want %d", mode, len(rows), decisions)
			}
			if want := "5m 240% x2, 20 2 -> 4 2 -> 4 yes scale up 2 -> 4"; !slicesHasPrefix(rows, want) {
				t.Errorf("%v: no step row like %q:\n%s", mode, want, strings.Join(rows, "\n"))
			}
			totals := replayTotals(t, r.stdout)
			for _, k := range []string{"scale events", "replica-minutes", "minutes below the metrics' proposal"} {
				if v := totals[k]; v[0] == "" || v[0] != v[1] {
					t.Errorf("%v: %s logged %q, replayed %q; want equal under the own spec", mode, k, v[0], v[1])
				}
			}
			if v := totals["minutes below the metrics' proposal"]; v[0] == "0.0" {
				t.Errorf("%v: the log spent no minute below the proposal; the policy should have held it", mode)
			}
		}
	})

	t.Run("pods that take time to start are not compared", func(t *testing.T) {
		r := runAt(t, addr, "simulate", "--history", "shop/web", "-f", own, "--startup", "30s")
		mustOK(t, r)
		m := matchedLine.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("no matched share in:\n%s", r.stdout)
		}
		if n, _ := strconv.Atoi(m[4]); n == 0 {
			t.Errorf("%q: new pods without a sample for 30s shaped no step", m[0])
		}
	})

	t.Run("a faster policy spends less time below the proposal", func(t *testing.T) {
		fast := strings.Replace(historyHPA, "{type: Pods, value: 2, periodSeconds: 60}", "{type: Pods, value: 6, periodSeconds: 60}", 1)
		r := runAt(t, addr, "simulate", "--history", "shop/web", "-f", writeFile(t, "fast.yaml", fast), "--startup", "0s")
		mustOK(t, r)
		totals := replayTotals(t, r.stdout)
		below := totals["minutes below the metrics' proposal"]
		logged, err1 := strconv.ParseFloat(below[0], 64)
		replayed, err2 := strconv.ParseFloat(below[1], 64)
		if err1 != nil || err2 != nil || !(replayed < logged) {
			t.Errorf("minutes below the proposal: logged %s, replayed %s; want fewer with 6 pods a minute", below[0], below[1])
		}
		ev := totals["scale events"]
		if l, r := atoi(t, ev[0]), atoi(t, ev[1]); r >= l {
			t.Errorf("scale events: logged %s, replayed %s; want fewer with 6 pods a minute", ev[0], ev[1])
		}
	})

	t.Run("a candidate must keep the logged metrics", func(t *testing.T) {
		other := strings.Replace(historyHPA, "name: memory", "name: cpu", 1)
		r := runAt(t, addr, "simulate", "--history", "shop/web", "-f", writeFile(t, "cpu.yaml", other))
		if r.code != 1 || !strings.Contains(r.stderr, "candidate metric 0 (Resource cpu Utilization) is not the logged metric 0 (Resource memory Utilization)") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
		r = runAt(t, addr, "simulate", "--history", "web", "-f", own)
		if r.code != 1 || !strings.Contains(r.stderr, "want NAMESPACE/NAME") {
			t.Errorf("bad --history: exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

func slicesHasPrefix(rows []string, prefix string) bool {
	for _, r := range rows {
		if strings.HasPrefix(r, prefix) {
			return true
		}
	}
	return false
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not a count: %v", s, err)
	}
	return n
}
