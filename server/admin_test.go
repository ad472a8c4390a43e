package server_test

import (
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1reflection "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
)

// TestReflectionListsAdminService: `grpcurl list` shows the admin service beside the API, and
// `grpcurl describe` its documentation.
func TestReflectionListsAdminService(t *testing.T) {
	addr, _ := servertest.Start(t, server.DefaultConfig(), server.Deps{})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	info, err := v1reflection.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	send := func(req *v1reflection.ServerReflectionRequest) *v1reflection.ServerReflectionResponse {
		t.Helper()
		if err := info.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := info.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if e := resp.GetErrorResponse(); e != nil {
			t.Fatal(e.GetErrorMessage())
		}
		return resp
	}
	var names []string
	for _, s := range send(&v1reflection.ServerReflectionRequest{MessageRequest: &v1reflection.ServerReflectionRequest_ListServices{}}).GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"recommender.v1.AdminService", "recommender.v1.RecommenderService"} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v, want %s among them", names, want)
		}
	}
	resp := send(&v1reflection.ServerReflectionRequest{MessageRequest: &v1reflection.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "recommender.v1.AdminService"}})
	admin := findFile(t, decodeFiles(t, resp.GetFileDescriptorResponse().GetFileDescriptorProto()), "recommender/v1/admin.proto")
	if leadingComment(admin, "Backup streams a consistent copy") == "" {
		t.Errorf("the admin service's file carries no comment on Backup (source info missing)")
	}
}
