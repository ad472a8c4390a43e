package server

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// FuzzDecisionInputMatchesUncached: the spec cache changes nothing. For any request,
// decisionInput (spec converted and validated once, then cached) returns the same input,
// options and violations, in the same order, as apiconv.RecommendFromProto followed by
// ValidateInput; asking twice (a cache hit) gives the same again, and so do the same spec
// naming other workloads, one valid and one not (the cache adds each reference to the entry
// of the spec without it, or converts the whole spec when one is invalid). Seeded from the
// upstream scenarios' specs and first steps.
func FuzzDecisionInputMatchesUncached(f *testing.F) {
	for _, raw := range scenarioRequests(f, 30) {
		var sim pb.SimulateRequest
		if err := protojson.Unmarshal(raw, &sim); err != nil {
			f.Fatal(err)
		}
		req := &pb.RecommendRequest{Target: &pb.TargetRef{Namespace: "ns", Name: "web"}, Spec: sim.GetSpec(), Options: sim.GetOptions()}
		if steps := sim.GetSteps(); len(steps) > 0 {
			req.CurrentReplicas = steps[0].GetCurrentReplicas()
			req.StatusReplicas = steps[0].StatusReplicas
			req.Pods, req.Metrics = steps[0].GetPods(), steps[0].GetMetrics()
		}
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	cfg := DefaultConfig()
	cfg.MaxPods = 50
	s := &Server{cfg: cfg}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req pb.RecommendRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		checkDecisionInput(t, s, &req)
		if req.Spec == nil {
			return
		}
		for _, name := range []string{"other-" + req.Spec.GetScaleTargetRef().GetName(), "not/a-name"} {
			other := proto.CloneOf(&req)
			other.Spec.ScaleTargetRef = &pb.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: name}
			checkDecisionInput(t, s, other)
		}
		noRef := proto.CloneOf(&req)
		noRef.Spec.ScaleTargetRef = nil
		checkDecisionInput(t, s, noRef)
	})
}

// checkDecisionInput is FuzzDecisionInputMatchesUncached's check of one request, asked twice.
func checkDecisionInput(t *testing.T, s *Server, req *pb.RecommendRequest) {
	t.Helper()
	cfg := s.cfg
	wantIn, wantOpts, want := apiconv.RecommendFromProto(req, cfg.Defaults)
	if len(want) == 0 {
		want = apiconv.FieldErrors(recommender.ValidateInput(&wantIn, "", recommender.Limits{MaxPods: cfg.MaxPods}))
	}
	for range 2 {
		in, opts, got := s.decisionInput(req)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("violations differ (-uncached +decisionInput):\n%s", diff)
		}
		quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
		// The cached defaulted spec (for a valid spec; the uncached path leaves Decide to
		// default it) is exactly the uncached spec defaulted.
		if in.Defaulted == nil && len(want) == 0 {
			t.Fatal("a valid request's input lacks the cached defaulted spec")
		}
		if in.Defaulted != nil {
			if diff := cmp.Diff(recommender.SetDefaults(wantIn.Spec), in.Defaulted, quantities); diff != "" {
				t.Fatalf("defaulted spec differs (-uncached +decisionInput):\n%s", diff)
			}
			in.Defaulted = nil
		}
		if diff := cmp.Diff(wantIn, in, quantities); diff != "" {
			t.Fatalf("input differs (-uncached +decisionInput):\n%s", diff)
		}
		if diff := cmp.Diff(wantOpts, opts); diff != "" {
			t.Fatalf("options differ (-uncached +decisionInput):\n%s", diff)
		}
	}
}

// TestSpecCacheFollowsContent: a caller in the same process may reuse one spec message and
// change it between calls; the cache is keyed by content, so the changed spec is converted
// again.
func TestSpecCacheFollowsContent(t *testing.T) {
	s := &Server{cfg: DefaultConfig()}
	spec := &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: &pb.CrossVersionObjectReference{Kind: "Deployment", Name: "web", ApiVersion: "apps/v1"},
		MaxReplicas:    10,
	}
	for _, max := range []int32{10, 20, 30, 10} {
		spec.MaxReplicas = max
		if got := s.specs.get(spec).spec.MaxReplicas; got != max {
			t.Fatalf("maxReplicas %d after the caller changed it to %d", got, max)
		}
	}
	if n := len(s.specs.m); n != 3 {
		t.Errorf("%d cache entries for 3 distinct specs", n)
	}
}

// TestSpecsSharingAllButTheirReference: specs that differ only in scaleTargetRef share one
// cache entry, converted once; each call's entry carries its own reference and equals
// converting that spec whole. An invalid reference gets the whole spec's violations.
func TestSpecsSharingAllButTheirReference(t *testing.T) {
	s := &Server{cfg: DefaultConfig()}
	for _, name := range []string{"template-1", "template-2", "not/valid", "template-3"} {
		spec := &pb.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: &pb.CrossVersionObjectReference{Kind: "Deployment", Name: name, ApiVersion: "apps/v1"},
			MaxReplicas:    29,
		}
		e := s.specs.get(spec)
		want := convertSpec(spec)
		if diff := cmp.Diff(want.spec, e.spec); diff != "" {
			t.Fatalf("%s: spec differs (-whole +cached):\n%s", name, diff)
		}
		if diff := cmp.Diff(want.defaulted, e.defaulted); diff != "" {
			t.Fatalf("%s: defaulted spec differs (-whole +cached):\n%s", name, diff)
		}
		if diff := cmp.Diff(want.conv, e.conv); diff != "" {
			t.Fatalf("%s: conversion violations differ (-whole +cached):\n%s", name, diff)
		}
		if diff := cmp.Diff(want.invalid, e.invalid); diff != "" {
			t.Fatalf("%s: violations differ (-whole +cached):\n%s", name, diff)
		}
		if n := len(s.specs.m); n != 1 {
			t.Fatalf("%s: %d cache entries, want the one of the spec without its reference", name, n)
		}
	}
}

// TestCachedSpecsOff: with a negative CachedSpecs nothing is kept, and every spec is
// converted afresh (to an equal entry).
func TestCachedSpecsOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CachedSpecs = -1
	s, err := New(cfg, Deps{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	spec := &pb.HorizontalPodAutoscalerSpec{MaxReplicas: 23}
	a, b := s.specs.get(spec), s.specs.get(spec)
	if a == b || a.spec.MaxReplicas != 23 || b.spec.MaxReplicas != 23 || len(s.specs.m) != 0 {
		t.Errorf("entries %p and %p, %d kept", a, b, len(s.specs.m))
	}
}

// TestCacheBounded: the cache holds at most CachedSpecs entries.
func TestCacheBounded(t *testing.T) {
	s := &Server{cfg: DefaultConfig()}
	s.specs.limit = 5
	for i := range 50 {
		s.specs.get(&pb.HorizontalPodAutoscalerSpec{MaxReplicas: int32(i + 1)})
		if n := len(s.specs.m); n > 5 {
			t.Fatalf("%d entries after %d specs, want at most 5", n, i+1)
		}
	}
}

// scenarioRequests reads the first n SimulateRequests of the upstream scenarios (the test data
// of package apiconv).
func scenarioRequests(t testing.TB, n int) []json.RawMessage {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "internal", "apiconv", "testdata", "upstream-scenarios.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	var out []json.RawMessage
	for len(out) < n && sc.Scan() {
		var line struct {
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		out = append(out, line.Request)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkSpecTableMemory reports the live heap each spec kept costs (heap-B/spec): the
// server's cache entry and each call's entry with its reference, after the specs of 4,000 of
// hpa-bench's targets were decoded and converted. Specs from one template differ only in
// scaleTargetRef; distinct ones also in a label selector (workload.Workload.SetDistinctSpecs).
func BenchmarkSpecTableMemory(b *testing.B) {
	const n = 4000
	for _, distinct := range []bool{false, true} {
		b.Run(fmt.Sprintf("distinct=%t", distinct), func(b *testing.B) {
			wl := workload.NewWorkload("bench", "bench", n)
			wl.SetDistinctSpecs(distinct)
			wire := make([][]byte, n)
			for i := range wire {
				var err error
				if wire[i], err = proto.Marshal(&pb.RecommendRequest{Spec: wl.Request(i, time.Now()).Spec}); err != nil {
					b.Fatal(err)
				}
			}
			var perSpec float64
			for b.Loop() {
				s := &Server{cfg: DefaultConfig()}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				kept := make([]*specEntry, n)
				for i, w := range wire {
					m := new(pb.RecommendRequest)
					if err := proto.Unmarshal(w, m); err != nil {
						b.Fatal(err)
					}
					kept[i] = s.specs.get(m.Spec)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perSpec = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(perSpec, "heap-B/spec")
		})
	}
}
