package server_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1reflection "google.golang.org/grpc/reflection/grpc_reflection_v1"
	v1alphareflection "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
)

// TestReflectionServesComments: what `grpcurl describe` reads, over both reflection versions,
// is the API's file with its comments (source info), and the other services still resolve.
func TestReflectionServesComments(t *testing.T) {
	addr, _ := servertest.Start(t, server.DefaultConfig(), server.Deps{})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	v1, err := v1reflection.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ask := func(symbol string) []*descriptorpb.FileDescriptorProto {
		t.Helper()
		if err := v1.Send(&v1reflection.ServerReflectionRequest{
			MessageRequest: &v1reflection.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol}}); err != nil {
			t.Fatal(err)
		}
		resp, err := v1.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if e := resp.GetErrorResponse(); e != nil {
			t.Fatalf("%s: %s", symbol, e.GetErrorMessage())
		}
		return decodeFiles(t, resp.GetFileDescriptorResponse().GetFileDescriptorProto())
	}

	api := findFile(t, ask("recommender.v1.RecommenderService"), "recommender/v1/recommender.proto")
	if got := leadingComment(api, "Recommend decides"); got == "" {
		t.Errorf("the API file carries no comment on Recommend (source info missing)")
	}
	if got := leadingComment(api, "ReportScale reports"); got == "" {
		t.Errorf("the API file carries no comment on ReportScale (source info missing)")
	}
	findFile(t, ask("grpc.health.v1.Health"), "grpc/health/v1/health.proto")

	// v1alpha (deprecated, still what older clients ask) answers the same.
	alpha, err := v1alphareflection.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the deprecated version is served for older clients, so it is tested
	req := &v1alphareflection.ServerReflectionRequest{MessageRequest: &v1alphareflection.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "recommender.v1.RecommendRequest"}}
	if err := alpha.Send(req); err != nil {
		t.Fatal(err)
	}
	resp, err := alpha.Recv()
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 as above
	files := resp.GetFileDescriptorResponse().GetFileDescriptorProto()
	api = findFile(t, decodeFiles(t, files), "recommender/v1/recommender.proto")
	if leadingComment(api, "Recommend decides") == "" {
		t.Errorf("v1alpha: the API file carries no comments")
	}
}

func decodeFiles(t *testing.T, raw [][]byte) []*descriptorpb.FileDescriptorProto {
	t.Helper()
	var out []*descriptorpb.FileDescriptorProto
	for _, b := range raw {
		fd := new(descriptorpb.FileDescriptorProto)
		if err := proto.Unmarshal(b, fd); err != nil {
			t.Fatal(err)
		}
		out = append(out, fd)
	}
	return out
}

func findFile(t *testing.T, files []*descriptorpb.FileDescriptorProto, name string) *descriptorpb.FileDescriptorProto {
	t.Helper()
	for _, f := range files {
		if f.GetName() == name {
			return f
		}
	}
	t.Fatalf("reflection did not return %s", name)
	return nil
}

// leadingComment returns the first leading comment of f that starts with prefix.
func leadingComment(f *descriptorpb.FileDescriptorProto, prefix string) string {
	for _, loc := range f.GetSourceCodeInfo().GetLocation() {
		if c := strings.TrimSpace(loc.GetLeadingComments()); strings.HasPrefix(c, prefix) {
			return c
		}
	}
	return ""
}
