package goclient_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	"github.com/hpa-recommender/hpa-recommender/internal/certgen"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// TestMutualTLS runs a real gRPC server that requires a client certificate from the test CA
// and checks that WithTLS, WithClientCertificate and WithBearerToken get through.
func TestMutualTLS(t *testing.T) {
	ca := certgen.New(t, "test CA")
	srvPath, srvKey := ca.Server(t, "server", "recommender.test")
	cliPath, cliKey := ca.Client(t, "client", "cluster-a")
	srvCert, err := tls.LoadX509KeyPair(srvPath, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{calls: map[string]int{}}
	s := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{srvCert},
			ClientCAs:    ca.Pool(),
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
		})),
		grpc.UnaryInterceptor(r.intercept),
	)
	pb.RegisterRecommenderServiceServer(s, r)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	addr := lis.Addr().String()

	c := newClient(t, addr, goclient.WithTLS(ca.CertFile), goclient.WithServerName("recommender.test"),
		goclient.WithClientCertificate(cliPath, cliKey), goclient.WithBearerToken("tok"))
	if _, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{}); err != nil {
		t.Fatalf("GetTarget over mTLS: %v", err)
	}
	if len(r.auth) != 1 || r.auth[0] != "Bearer tok" {
		t.Errorf("authorization = %q, want [Bearer tok]", r.auth)
	}

	// Without the client certificate the handshake fails.
	noCert := newClient(t, addr, goclient.WithTLS(ca.CertFile), goclient.WithServerName("recommender.test"), goclient.WithTimeout(2*time.Second))
	if _, err := noCert.GetTarget(t.Context(), &pb.GetTargetRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("without a client certificate: %v, want Unavailable", err)
	}
}
