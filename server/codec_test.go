package server_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
)

// rawCodec sends and receives *[]byte as they are, so a test can put any bytes on the wire.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }
func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

// TestUndecodableRequestIsInvalidArgument: bytes that are not a request in the protobuf wire
// format (or not valid UTF-8 in a string field) are the caller's fault: InvalidArgument with
// a BadRequest that says so, not grpc-go's Internal; the server keeps serving.
func TestUndecodableRequestIsInvalidArgument(t *testing.T) {
	addr, _ := servertest.Start(t, server.DefaultConfig(), server.Deps{})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	badUTF8, err := proto.Marshal(&pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "c", Namespace: "ns", Name: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	badUTF8[len(badUTF8)-1] = 0xff // the name's last byte
	// A RecommendRequest (decoded on its own path) with invalid UTF-8 deep inside: a map key of
	// a pod's container.
	rec, err := proto.Marshal(&pb.RecommendRequest{Target: &pb.TargetRef{Namespace: "ns", Name: "x"},
		Pods: []*pb.PodState{{Name: "p", Containers: []*pb.ContainerState{{Name: "c", Requests: map[string]string{"cpu\x01": "1"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	badRecommend := bytes.Replace(rec, []byte("cpu\x01"), []byte("cpu\xff"), 1)
	for name, c := range map[string]struct {
		method string
		body   []byte
	}{
		"truncated":           {"GetTarget", []byte{0x0a, 0x05, 0x01}},
		"bad tag":             {"GetTarget", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		"not UTF-8":           {"GetTarget", badUTF8},
		"marked by a caller":  {"GetTarget", []byte{0xfa, 0xff, 0xff, 0xff, 0x0f, 0x02, 'h', 'i'}}, // field 536870911, "hi"
		"Recommend truncated": {"Recommend", rec[:len(rec)-2]},
		"Recommend not UTF-8": {"Recommend", badRecommend},
	} {
		t.Run(name, func(t *testing.T) {
			var out []byte
			body := c.body
			err := conn.Invoke(t.Context(), "/recommender.v1.RecommenderService/"+c.method, &body, &out,
				grpc.ForceCodecV2(rawCodec{}))
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("code %v (%v), want InvalidArgument", st.Code(), err)
			}
			var br *errdetails.BadRequest
			for _, d := range st.Details() {
				if b, ok := d.(*errdetails.BadRequest); ok {
					br = b
				}
			}
			if br == nil || len(br.FieldViolations) != 1 || br.FieldViolations[0].Field != "" {
				t.Fatalf("details %v, want one BadRequest violation of the whole request", st.Details())
			}
		})
	}
	// Still serving, and a good request decodes.
	c := pb.NewRecommenderServiceClient(conn)
	if _, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "c", Namespace: "ns", Name: "x"}}); status.Code(err) != codes.NotFound {
		t.Errorf("GetTarget of an unknown target: %v, want NotFound", err)
	}
}

// TestCodecWritesWhatProtoMarshalReads: every response the codec writes decodes, with
// protobuf-go, to the very message; and it decodes what protobuf-go writes.
func TestCodecWritesWhatProtoMarshalReads(t *testing.T) {
	codec := server.NewCodec()
	resp := &pb.RecommendResponse{DesiredReplicas: 4, CurrentReplicas: 3, Scale: true, RecommendationId: "r1",
		Explanation: &pb.Explanation{Message: "scale up ünïcode", LimitingPolicy: "scaleUp Pods 4/15s"},
		Conditions:  []*pb.Condition{{Type: "AbleToScale", Status: "True", Reason: "SucceededRescale"}}}
	big := proto.CloneOf(resp)
	for range 2000 { // above grpc-go's pooling threshold
		big.Conditions = append(big.Conditions, resp.Conditions[0])
	}
	for _, m := range []*pb.RecommendResponse{resp, big, {}} {
		b, err := codec.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back pb.RecommendResponse
		if err := proto.Unmarshal(b.Materialize(), &back); err != nil {
			t.Fatal(err)
		}
		b.Free()
		if d := cmp.Diff(m, &back, protocmp.Transform()); d != "" {
			t.Fatalf("round trip (-sent +read):\n%s", d)
		}
		wire, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var got pb.RecommendResponse
		if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &got); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(m, &got, protocmp.Transform()); d != "" {
			t.Fatalf("codec decoding (-sent +read):\n%s", d)
		}
	}
}
