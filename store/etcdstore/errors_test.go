package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/etcdstore"
)

// checkOwnWords fails t unless err, an error the store returned, carries nothing of etcd's: no
// gRPC status a server would find and forward (status.FromError), and none of etcd's text.
func checkOwnWords(t *testing.T, err error, etcdText ...string) {
	t.Helper()
	if st, ok := status.FromError(err); ok {
		t.Errorf("error %q carries a gRPC status (%s %q) a server would forward", err, st.Code(), st.Message())
	}
	for _, text := range append(etcdText, "etcdserver", "rpc error", "code = ") {
		if strings.Contains(err.Error(), text) {
			t.Errorf("error %q contains etcd's text %q", err, text)
		}
	}
}

// TestTranslateErr: each kind of error the etcd client returns (gRPC statuses as they arrive,
// etcd's rpctypes errors, the client's own, context errors, wrapped or not) comes back in the
// store's words, as ErrUnavailable exactly when etcd cannot serve now, and as a NoSpaceError
// naming the endpoints when etcd is over its space quota.
func TestTranslateErr(t *testing.T) {
	for _, tc := range []struct {
		err         error
		unavailable bool
		want        string // in the store's message
		noSpace     bool
	}{
		{status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused\""), true, "etcd cannot serve", false},
		{rpctypes.ErrGRPCNoLeader, true, "no leader", false},
		{rpctypes.ErrNoLeader, true, "no leader", false},
		{fmt.Errorf("wrapped: %w", rpctypes.ErrGRPCNoSpace), false, "space quota", true},
		{rpctypes.ErrNoSpace, false, "space quota", true},
		{rpctypes.ErrGRPCTimeout, true, "timed out", false},
		{rpctypes.ErrTooManyRequests, true, "overloaded", false},
		{rpctypes.ErrGRPCLeaderChanged, true, "etcd cannot serve", false},
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max (4194405 vs. 4194304)"), true, "out of resources", false},
		{context.DeadlineExceeded, true, "did not answer", false},
		{status.Error(codes.Canceled, "grpc: the client connection is closing"), true, "did not answer", false},
		{clientv3.ErrNoAvailableEndpoints, true, "no etcd endpoint", false},
		{rpctypes.ErrGRPCRequestTooLarge, false, "larger than etcd accepts", false},
		{rpctypes.ErrTooManyOps, false, "more operations", false},
		{rpctypes.ErrGRPCAuthFailed, false, "credentials", false},
		{rpctypes.ErrGRPCPermissionDenied, false, "denied", false},
		{rpctypes.ErrGRPCCorrupt, false, "gRPC code DataLoss", false},
		{status.Error(codes.FailedPrecondition, "etcdserver: something new"), false, "gRPC code FailedPrecondition", false},
		{errors.New("some other failure"), false, "gRPC code Unknown", false},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			got := etcdstore.TranslateErr(tc.err)
			if errors.Is(got, store.ErrUnavailable) != tc.unavailable {
				t.Errorf("%q: ErrUnavailable %v, want %v", got, !tc.unavailable, tc.unavailable)
			}
			var ns *store.NoSpaceError
			if errors.As(got, &ns) != tc.noSpace || tc.noSpace && !strings.Contains(ns.Where, "127.0.0.1:2379") {
				t.Errorf("%q: a NoSpaceError naming the endpoints %v, want %v", got, !tc.noSpace, tc.noSpace)
			}
			if !strings.Contains(got.Error(), tc.want) {
				t.Errorf("%q, want it to say %q", got, tc.want)
			}
			desc := tc.err.Error()
			if st, ok := status.FromError(tc.err); ok {
				desc = st.Message()
			}
			checkOwnWords(t, got, desc)
		})
	}
}

// TestErrorsInOwnWords: at the store's API, against a real etcd, no call's error carries etcd's
// status or text: with etcd stopped (ErrUnavailable), a closed store (ErrUnavailable), a record
// over etcd's request limit, and an etcd over its space quota (ErrNoSpace).
func TestErrorsInOwnWords(t *testing.T) {
	key := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	t.Run("etcd stopped", func(t *testing.T) {
		stop, endpoint := startEtcdForTest(t)
		s := open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: newPrefix(), RequestTimeout: 300 * time.Millisecond})
		countTo(t, s, key, 1)
		stop()
		_, err := s.Update(t.Context(), key, counter)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Update with etcd stopped: %v, want ErrUnavailable", err)
		}
		checkOwnWords(t, err)
	})
	t.Run("store closed", func(t *testing.T) {
		s := open(t, etcdstore.Config{Prefix: newPrefix()})
		_ = s.Close()
		_, err := s.Get(t.Context(), key)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Get of a closed store: %v, want ErrUnavailable", err)
		}
		checkOwnWords(t, err)
	})
	t.Run("request too large", func(t *testing.T) {
		_, endpoint := startEtcdForTest(t, func(c *embed.Config) { c.MaxRequestBytes = 512 })
		s := open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: newPrefix()})
		_, err := s.Update(t.Context(), key, func(cur *store.Target) (*store.Target, error) {
			next, _ := counter(cur)
			next.Spec.ScaleTargetRef.Name = strings.Repeat("x", 1024)
			return next, nil
		})
		if err == nil {
			t.Fatal("an Update over etcd's --max-request-bytes succeeded")
		}
		checkOwnWords(t, err, rpctypes.ErrRequestTooLarge.Error())
	})
	t.Run("space quota", func(t *testing.T) {
		_, endpoint := startEtcdForTest(t, func(c *embed.Config) { c.QuotaBackendBytes = 16 << 20 })
		raw := clientOf(t, endpoint)
		s := open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: newPrefix(), CompactionInterval: -1})
		big := strings.Repeat("x", 512<<10)
		for i := 0; ; i++ {
			_, err := raw.Put(t.Context(), "/other/big", big)
			if errors.Is(err, rpctypes.ErrNoSpace) {
				break
			}
			if err != nil || i == 200 {
				t.Fatalf("filling etcd's quota: put %d: %v", i, err)
			}
		}
		_, err := s.Update(t.Context(), key, counter)
		var ns *store.NoSpaceError
		if !errors.As(err, &ns) || !strings.Contains(ns.Where, endpoint) || !strings.Contains(err.Error(), "space quota") {
			t.Errorf("Update on a full etcd: %v, want a NoSpaceError naming the endpoint %s and the space quota", err, endpoint)
		}
		checkOwnWords(t, err, rpctypes.ErrNoSpace.Error())
	})
}
