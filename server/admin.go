package server

import (
	"bufio"
	"bytes"
	"fmt"
	"time"

	"google.golang.org/grpc"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// adminServer is AdminService, the operators' RPCs. It is its own type because the generated
// Unimplemented*Server types of two services cannot both be embedded in Server.
type adminServer struct {
	pb.UnimplementedAdminServiceServer
	s *Server
}

// backupChunk is the most bytes one BackupResponse carries: well under gRPC's default 4 MiB
// message limit on the receiving side, large enough that a message costs little per byte.
const backupChunk = 256 << 10

// Backup streams a copy of the store's file (store.Backuper). Authorization: with
// authentication on, an admin only (certificates never make one); without authentication,
// every caller, as for every other RPC on an open server (the server says at start that it
// runs open).
func (a adminServer) Backup(_ *pb.BackupRequest, stream grpc.ServerStreamingServer[pb.BackupResponse]) error {
	ctx := stream.Context()
	err := a.s.backup(stream)
	return a.s.toStatus(ctx, "Backup", err)
}

func (s *Server) backup(stream grpc.ServerStreamingServer[pb.BackupResponse]) error {
	ctx := stream.Context()
	if s.authEnabled() {
		id, ok := IdentityFrom(ctx)
		switch {
		case !ok:
			return &unauthenticated{"missing credentials"}
		case !id.Admin:
			return &permissionDenied{fmt.Sprintf("only an admin (a token of cluster %q) may back up the store; cluster %q may not", adminCluster, id.Cluster)}
		}
	}
	b, ok := s.store.(store.Backuper)
	if !ok {
		return &failedPrecondition{backupUnsupported(s.cfg.Store)}
	}
	start := time.Now()
	w := bufio.NewWriterSize(chunkWriter{stream}, backupChunk)
	n, err := b.Backup(ctx, w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "store backed up", "bytes", n, "took", time.Since(start))
	return nil
}

// backupUnsupported says why the store of kind cannot be backed up here, and what does it.
func backupUnsupported(kind string) string {
	switch kind {
	case StoreEtcd:
		return "the etcd store is backed up with etcd's own tools, not through this service: etcdctl snapshot save FILE against one etcd member"
	case StoreMemory:
		return "the memory store keeps nothing across a restart, so there is nothing to back up; use --store bolt for a durable store"
	}
	return fmt.Sprintf("the %s store cannot be backed up through this service", kind)
}

// chunkWriter sends what is written to it as BackupResponses of at most backupChunk bytes.
type chunkWriter struct {
	stream grpc.ServerStreamingServer[pb.BackupResponse]
}

func (c chunkWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), backupChunk)
		// A copy: a sent message may be read after Send returns (stats handlers).
		if err := c.stream.Send(&pb.BackupResponse{Chunk: bytes.Clone(p[:k])}); err != nil {
			return n, err
		}
		n += k
		p = p[k:]
	}
	return n, nil
}
