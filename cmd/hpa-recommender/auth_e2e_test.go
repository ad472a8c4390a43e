package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

func withBearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// TestTokensAndRateLimitThroughTheBinary runs the real binary with --tokens-file and
// --rate-limit: credentials are required, a tenant stays in its cluster, the rate limit
// answers ResourceExhausted with a retry hint, and SIGHUP reloads the tokens.
func TestTokensAndRateLimitThroughTheBinary(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# test tokens\ntok-c1,c1\ntok-admin,*\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, "--store", "memory", "--tokens-file", tokens, "--rate-limit", "0.2", "--rate-burst", "2")
	client := pb.NewRecommenderServiceClient(dial(t, p.addr))
	ctx := t.Context()

	req := request(t, 2, "30")
	req.Target = &pb.TargetRef{Namespace: "shop", Name: "web"}
	if _, err := client.Recommend(ctx, req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("no token: %v, want Unauthenticated", err)
	}
	if _, err := client.Recommend(withBearer(ctx, "tok-c1"), req); err != nil {
		t.Fatalf("c1 token: %v", err)
	}
	other := request(t, 2, "30") // cluster c1 in the shared fixture; ask for c2 instead
	other.Target = &pb.TargetRef{Cluster: "c2", Namespace: "shop", Name: "web"}
	if _, err := client.Recommend(withBearer(ctx, "tok-c1"), other); status.Code(err) != codes.PermissionDenied {
		t.Errorf("c1 token on c2's target: %v, want PermissionDenied", err)
	}
	list, err := client.ListTargets(withBearer(ctx, "tok-admin"), &pb.ListTargetsRequest{})
	if err != nil || len(list.Targets) != 1 || list.Targets[0].Target.Cluster != "c1" {
		t.Errorf("admin list: %v %v, want the one c1 target", list.GetTargets(), err)
	}

	// Burst 2: the second call passes, the third is over the limit.
	if _, err := client.Recommend(withBearer(ctx, "tok-c1"), req); err != nil {
		t.Fatalf("second call: %v", err)
	}
	_, err = client.Recommend(withBearer(ctx, "tok-c1"), req)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third call: %v, want ResourceExhausted", err)
	}
	hint := false
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() > 0 {
			hint = true
		}
	}
	if !hint {
		t.Errorf("ResourceExhausted without a RetryInfo delay: %v", status.Convert(err).Details())
	}

	// SIGHUP reloads the file at once.
	if err := os.WriteFile(tokens, []byte("tok-c1,c1\ntok-c3,c3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mt := time.Now().Add(time.Minute)
	if err := os.Chtimes(tokens, mt, mt); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := client.ListTargets(withBearer(ctx, "tok-c3"), &pb.ListTargetsRequest{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new token never worked: %v\n%s", err, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := client.ListTargets(withBearer(ctx, "tok-admin"), &pb.ListTargetsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("removed admin token: %v, want Unauthenticated", err)
	}
	if log := p.stderr.String(); strings.Contains(log, "running without authentication") {
		t.Errorf("the log says it runs without authentication:\n%s", log)
	}
	p.term(t)
}

func TestOpenBinarySaysItRunsWithoutAuthentication(t *testing.T) {
	p := startBinary(t, "--store", "memory")
	p.term(t)
	if log := p.stderr.String(); !strings.Contains(log, "running without authentication") {
		t.Errorf("the log does not say it runs without authentication:\n%s", log)
	}
}

func TestBadTokensFileExitsNamingTheLine(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("s3cret,c1\n\ns3cret,c2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "--store", "memory", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--tokens-file", tokens).CombinedOutput()
	if err == nil {
		t.Fatalf("exit 0, want an error:\n%s", out)
	}
	if !strings.Contains(string(out), tokens+":3: duplicate token") || strings.Contains(string(out), "s3cret") {
		t.Errorf("output %q: want the file, line 3 and no token", out)
	}
}
