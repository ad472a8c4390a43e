package workload

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// checkEncoding fails t unless b decodes to want and is as long as want's proto encoding: the
// same message, each field written once and none at its default.
func checkEncoding(t *testing.T, name string, b []byte, want *pb.RecommendRequest) {
	t.Helper()
	got := new(pb.RecommendRequest)
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatalf("%s: the encoding does not decode: %v", name, err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("%s: the encoding decodes to another request (-want +got):\n%s", name, cmp.Diff(want, got, protocmp.Transform()))
	}
	if n := proto.Size(want); len(b) != n {
		t.Fatalf("%s: the encoding is %d bytes, proto.Marshal's %d", name, len(b), n)
	}
}

// TestAppendRequestIsRequest: for several targets, replica counts, call numbers, load swings
// and times, what appendRequestWithPods writes is the request RequestWithPods builds for the
// same call, and it leaves what b held before alone.
func TestAppendRequestIsRequest(t *testing.T) {
	nows := []time.Time{
		time.Now(),
		time.Unix(5, 0), // samples taken before 1970: negative seconds
		time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.UTC),
	}
	for _, names := range [][2]string{{"cluster-a", "ns"}, {"", ""}} {
		wl := NewWorkload(names[0], names[1], 12346)
		for _, sc := range []struct {
			swing            float64
			shared, distinct bool
		}{{0, false, false}, {DefaultLoadSwing, false, false}, {0.9, false, false}, {DefaultLoadSwing, true, false}, {DefaultLoadSwing, false, true}} {
			swing := sc.swing
			wl.SetLoadSwing(swing)
			wl.SetSharedSpec(sc.shared)
			wl.SetDistinctSpecs(sc.distinct)
			for _, i := range []int{0, 1, 96, 97, 12345} {
				// 0 pods; 300, a list of samples whose length takes 3 bytes.
				for _, replicas := range []int32{0, 1, 7, 20, 40, 300} {
					for _, k := range []int64{1, 2, 7, 13, 24, 1000003} {
						for _, now := range nows {
							name := fmt.Sprintf("cluster %q shared spec %t distinct %t swing %g target %d replicas %d call %d at %v", names[0], sc.shared, sc.distinct, swing, i, replicas, k, now)
							wl.targets[i].calls.Store(k - 1)
							want := wl.RequestWithPods(i, replicas, now)
							wl.targets[i].calls.Store(k - 1)
							b := wl.appendRequestWithPods([]byte("held"), i, replicas, now)
							if !bytes.HasPrefix(b, []byte("held")) {
								t.Fatalf("%s: the bytes b held before were overwritten", name)
							}
							checkEncoding(t, name, b[4:], want)
						}
					}
				}
			}
		}
	}
}

// TestAppendTimestamp: appendTimestamp writes what proto.Marshal writes for timestamppb.New,
// nanoseconds and times before 1970 included (the workload's samples are whole seconds).
func TestAppendTimestamp(t *testing.T) {
	for _, at := range []time.Time{
		time.Unix(0, 0), time.Unix(1, 0), time.Unix(0, 1), time.Unix(-5, 0), time.Unix(-5, 999999999),
		time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.UTC), time.Now(),
	} {
		want := mustMarshal("timestamp", &pb.SimulateStep{Time: timestamppb.New(at)}) // field 1
		if got := appendTimestamp(nil, 1, at); !bytes.Equal(got, want) {
			t.Errorf("%v: appendTimestamp wrote %x, proto.Marshal %x", at, got, want)
		}
	}
}

// TestAppendRequestCountsCalls: AppendRequest is Request's encoding, with the replica count a
// reported scale left, and counts the call as Request does, so calls alternating between them
// see one sequence of calls.
func TestAppendRequestCountsCalls(t *testing.T) {
	wl := NewWorkload("c", "ns", 3)
	now := time.Now()
	wl.Applied(2, 13)
	for k := range int64(30) {
		if k%2 == 0 {
			wl.Request(2, now)
		} else {
			wl.AppendRequest(nil, 2, now)
		}
		if got := wl.targets[2].calls.Load(); got != k+1 {
			t.Fatalf("after %d calls the target counts %d", k+1, got)
		}
		wl.targets[2].calls.Store(k)
		want := wl.Request(2, now)
		wl.targets[2].calls.Store(k)
		checkEncoding(t, fmt.Sprintf("call %d", k+1), wl.AppendRequest(nil, 2, now), want)
	}
}
