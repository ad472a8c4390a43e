package main_test

import (
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// TestBackupOfEtcdStoreRefused: the binary on the etcd store answers a backup with
// FailedPrecondition pointing to etcd's own snapshot.
func TestBackupOfEtcdStoreRefused(t *testing.T) {
	reps, _ := startReplicas(t, 1, "backup")
	stream, err := pb.NewAdminServiceClient(dial(t, reps[0].p.addr)).Backup(t.Context(), &pb.BackupRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if err == io.EOF {
		t.Fatal("the etcd store sent a backup")
	}
	st, _ := status.FromError(err)
	if st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "etcdctl snapshot save") {
		t.Errorf("got %v, want FailedPrecondition naming etcdctl snapshot save", err)
	}
}
