//go:build e2e

package scaler

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	"github.com/hpa-recommender/hpa-recommender/clients/hpactl"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// DecisionExplained: one decision, read where a person looks for it. A chpa scaled by the
// scaler against the real service: kubectl describe chpa shows the decision's sentence as
// status.explanation and as the reason of its SuccessfulRescale event, and the service's decision
// log (ListDecisions, through goclient, and hpactl history) holds the same decision: the same
// sentence and counts, and the outcome the scaler reported.
func (e *e2eEnv) decisionExplained(t *testing.T) {
	e.installCRD(t)
	ns := "decision-explained"
	f := e.objectFixture(t, ns, SourceCustom)
	if _, err := e.kubectl(t, objectHPA("CentralHorizontalPodAutoscaler", ns, "web", "Deployment"), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	key := ns + "/web"
	waitAutoscaler(t, f.s, key, nil)

	// 2 pods at 150% of the 60% target propose 5; the policy adds one pod per 3 s.
	f.setDemand(300)
	f.kubelet(f.kube)
	if err := f.s.SyncOne(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	if r := f.replicas(); r != 3 {
		t.Fatalf("replicas = %d after the sync, want 3", r)
	}
	f.rec.mu.Lock()
	reports := append([]*pb.ReportScaleRequest(nil), f.rec.reports...)
	f.rec.mu.Unlock()
	if len(reports) != 1 || !reports[0].GetSucceeded() || reports[0].GetRecommendationId() == "" {
		t.Fatalf("reports = %v, want one success with a recommendation id", reports)
	}
	id := reports[0].GetRecommendationId()

	// The service's decision log, as any client reads it.
	client, err := goclient.New(f.svc.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	entries, err := client.ListAllDecisions(f.ctx, &pb.ListDecisionsRequest{Target: &pb.TargetRef{Cluster: "c1", Namespace: ns, Name: "web"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var entry *pb.DecisionLogEntry
	for _, en := range entries {
		if en.GetRecommendationId() == id {
			entry = en
		}
	}
	if entry == nil {
		t.Fatalf("decision log %v has no entry of recommendation %s", entries, id)
	}
	sentence := "scale up 2 -> 3: cpu utilization 150% of 60% target proposes 5; limited to 3 by scaleUp Pods 1/3s, which had 1 replica left to add in its 3s period"
	if entry.GetMessage() != sentence || entry.GetCurrentReplicas() != 2 || entry.GetDesiredReplicas() != 3 || entry.GetOutcome() != "succeeded" {
		t.Errorf("logged decision: message %q, %d -> %d, outcome %q; want %q, 2 -> 3, succeeded",
			entry.GetMessage(), entry.GetCurrentReplicas(), entry.GetDesiredReplicas(), entry.GetOutcome(), sentence)
	}

	// hpactl history: the same decision, as a row of the log.
	var hist, errOut strings.Builder
	args := []string{"history", "--addr", f.svc.addr, "--plaintext", "--cluster", "c1", "--namespace", ns, "--name", "web"}
	if code := hpactl.Run(f.ctx, args, &hist, &errOut); code != 0 {
		t.Fatalf("hpactl %v: exit %d: %s", args, code, errOut.String())
	}
	row := regexp.MustCompile(`(?m)^.*SuccessfulRescale\s+2 -> 3\s+succeeded\s+` + regexp.QuoteMeta(sentence) + `$`)
	if !row.MatchString(hist.String()) {
		t.Errorf("hpactl history has no row of the decision (want %s):\n%s", row, hist.String())
	}

	// kubectl describe chpa: the sentence as status.explanation and as the event's reason (the
	// recorder sends events asynchronously: wait for it).
	wants := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s+Explanation:\s+` + regexp.QuoteMeta(sentence) + `$`),
		regexp.MustCompile(`(?m)^\s+Normal\s+SuccessfulRescale\s+.*hpa-scaler\s+` + regexp.QuoteMeta("New size: 3; reason: "+sentence) + `$`),
	}
	var out string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if out, err = e.kubectl(t, "", "describe", "chpa", "web", "-n", ns); err != nil {
			t.Fatal(err)
		}
		missing := 0
		for _, re := range wants {
			if !re.MatchString(out) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, re := range wants {
				if !re.MatchString(out) {
					t.Errorf("kubectl describe chpa does not match %s", re)
				}
			}
			break
		}
	}
	t.Logf("kubectl describe chpa:\n%s", out)
}
