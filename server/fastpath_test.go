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
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	"github.com/hpa-recommender/hpa-recommender/internal/testkit/workload"
	"github.com/hpa-recommender/hpa-recommender/internal/wirecodec"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// FuzzDecisionInputMatchesUncached: the spec cache changes nothing. For any request,
// decisionInput (spec converted and validated once, then cached) returns the same input,
// options and violations, in the same order, as apiconv.RecommendFromProto followed by ValidateInput;
// asking twice (a cache hit) gives the same again, and so does a request decoded by the
// server's codec, whose spec the cache finds by address. Seeded from the upstream scenarios' specs
// and first steps.
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
		checkDecisionInput(t, s, b)
		// The same spec naming other workloads, one valid and one not: the codec composes
		// them of the template it now holds (wirecodec.Template), and the server adds each
		// reference to the template's entry, or converts the whole spec when one is invalid.
		if req.Spec == nil {
			return
		}
		for _, name := range []string{"other-" + req.Spec.GetScaleTargetRef().GetName(), "not/a-name"} {
			other := proto.CloneOf(&req)
			other.Spec.ScaleTargetRef = &pb.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: name}
			ob, err := proto.Marshal(other)
			if err != nil {
				t.Fatal(err)
			}
			checkDecisionInput(t, s, ob)
		}
	})
}

// checkDecisionInput is FuzzDecisionInputMatchesUncached's check of one request's bytes b.
func checkDecisionInput(t *testing.T, s *Server, b []byte) {
	t.Helper()
	cfg := s.cfg
	var req pb.RecommendRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	wantIn, wantOpts, want := apiconv.RecommendFromProto(&req, cfg.Defaults)
	if len(want) == 0 {
		want = apiconv.FieldErrors(recommender.ValidateInput(&wantIn, "", recommender.Limits{MaxPods: cfg.MaxPods}))
	}
	// Plainly decoded, then twice through the server's codec: the second time its spec is
	// the message the codec shares, found in the cache by address.
	reqs := []*pb.RecommendRequest{&req, &req}
	for range 2 {
		m := new(pb.RecommendRequest)
		if err := (wirecodec.Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m); err != nil || wirecodec.DecodeError(m) != nil {
			t.Fatalf("the codec does not decode what proto.Unmarshal does: %v %v", err, wirecodec.DecodeError(m))
		}
		reqs = append(reqs, m)
	}
	for _, r := range reqs {
		buf := apiconv.GetBuffers() // recycled: what earlier inputs left would show
		in, opts, got := s.decisionInput(r, buf)
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
		buf.Release()
	}
}

// TestSpecCacheByAddressOnlyForCodecSpecs: a caller in the same process may reuse one spec
// message and change it between calls; the cache finds only the codec's shared specs, which
// never change, by address, so the changed spec is converted again.
func TestSpecCacheByAddressOnlyForCodecSpecs(t *testing.T) {
	s := &Server{cfg: DefaultConfig()}
	spec := &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: &pb.CrossVersionObjectReference{Kind: "Deployment", Name: "web", ApiVersion: "apps/v1"},
		MaxReplicas:    10,
	}
	for _, max := range []int32{10, 20, 30} {
		spec.MaxReplicas = max
		if got := s.specs.get(spec).spec.MaxReplicas; got != max {
			t.Fatalf("maxReplicas %d after the caller changed it to %d: the cache kept the spec by address", got, max)
		}
	}
}

// TestSpecConvertedOncePerCodecSpec: requests the codec decoded from the same spec bytes share
// one spec message, and the server converts it once: every later request gets the very entry
// attached to the message. A spec the codec no longer shares is converted again (to an equal
// entry), not found by an address it no longer vouches for.
func TestSpecConvertedOncePerCodecSpec(t *testing.T) {
	s := &Server{cfg: DefaultConfig()}
	decode := codecSpec(t, "converted-once", 17)
	first := decode()
	e := s.specs.get(first)
	if v, shared := wirecodec.Attachment(first); !shared || v != e {
		t.Fatalf("after the first call the codec's spec holds %v (shared %t), want the entry %p", v, shared, e)
	}
	for range 3 {
		if got := s.specs.get(decode()); got != e {
			t.Fatal("a request with the same spec bytes converted the spec again")
		}
	}
	// A copy is not the codec's: found by its encoding, in an entry of its own.
	c := proto.CloneOf(first)
	ec := s.specs.get(c)
	if ec == e || ec.spec.MaxReplicas != 17 || s.specs.get(c) != ec {
		t.Fatal("a spec the codec does not share was not converted once and found by its encoding")
	}
}

// TestSpecTemplateConvertedOnce: specs that differ only in scaleTargetRef, which the codec
// composes of one template, are converted through the template: the template once, each
// spec's entry its own (with its reference) and equal to converting that spec whole. An
// invalid reference gets the whole spec's violations.
func TestSpecTemplateConvertedOnce(t *testing.T) {
	s := &Server{cfg: DefaultConfig()}
	decodeRef := func(name string) *pb.HorizontalPodAutoscalerSpec {
		return codecSpec(t, name, 29)()
	}
	decodeRef("template-0") // the first spec of a template is decoded whole
	var template *pb.HorizontalPodAutoscalerSpec
	var templateEntry *specEntry
	for _, name := range []string{"template-1", "template-2", "not/valid"} {
		spec := decodeRef(name)
		tmpl := wirecodec.Template(spec)
		if tmpl == nil || (template != nil && tmpl != template) {
			t.Fatalf("%s: template %p, want one shared template", name, tmpl)
		}
		template = tmpl
		e := s.specs.get(spec)
		v, _ := wirecodec.Attachment(template)
		if templateEntry == nil {
			templateEntry, _ = v.(*specEntry)
		}
		if v == nil || v != templateEntry {
			t.Fatalf("%s: the template's entry is %v, want it converted once (%p)", name, v, templateEntry)
		}
		want := convertSpec(spec)
		if diff := cmp.Diff(want.spec, e.spec); diff != "" {
			t.Fatalf("%s: spec differs (-whole +through the template):\n%s", name, diff)
		}
		if diff := cmp.Diff(want.defaulted, e.defaulted); diff != "" {
			t.Fatalf("%s: defaulted spec differs (-whole +through the template):\n%s", name, diff)
		}
		if len(want.conv)+len(want.invalid) != len(e.conv)+len(e.invalid) || (len(e.invalid) > 0 && !cmp.Equal(want.invalid, e.invalid)) {
			t.Fatalf("%s: violations %v %v, want %v %v", name, e.conv, e.invalid, want.conv, want.invalid)
		}
		if e.spec.ScaleTargetRef.Name != name || s.specs.get(spec) != e {
			t.Fatalf("%s: entry %+v not the spec's own, or not kept with it", name, e.spec.ScaleTargetRef)
		}
	}
}

// TestCachedSpecsSizesTheCodecTable: New sizes the codec's spec table from CachedSpecs; with
// none, a spec is decoded for every request and converted every time (to an equal entry).
func TestCachedSpecsSizesTheCodecTable(t *testing.T) {
	t.Cleanup(func() { wirecodec.SetSpecTableSize(0) })
	decode := codecSpec(t, "sized-table", 23)
	for _, n := range []int{-1, 0} {
		cfg := DefaultConfig()
		cfg.CachedSpecs = n
		s, err := New(cfg, Deps{Store: memstore.New()})
		if err != nil {
			t.Fatal(err)
		}
		a, b := decode(), decode()
		if shared := a == b && wirecodec.Interned(a); shared != (n == 0) {
			t.Errorf("CachedSpecs %d: the codec shared the spec: %t", n, shared)
		}
		if ea, eb := s.specs.get(a), s.specs.get(b); ea.spec.MaxReplicas != 23 || eb.spec.MaxReplicas != 23 || (ea == eb) != (n == 0) {
			t.Errorf("CachedSpecs %d: entries %p and %p", n, ea, eb)
		}
	}
}

// codecSpec returns a function that decodes, with the server's codec, a request whose spec
// scales Deployment name up to maxReplicas, and returns its spec: the same bytes each time.
func codecSpec(t *testing.T, name string, maxReplicas int32) func() *pb.HorizontalPodAutoscalerSpec {
	b, err := proto.Marshal(&pb.RecommendRequest{Target: &pb.TargetRef{Namespace: "ns", Name: "web"}, Spec: &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: &pb.CrossVersionObjectReference{Kind: "Deployment", Name: name, ApiVersion: "apps/v1"},
		MaxReplicas:    maxReplicas,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return func() *pb.HorizontalPodAutoscalerSpec {
		m := new(pb.RecommendRequest)
		if err := (wirecodec.Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m); err != nil {
			t.Fatal(err)
		}
		return m.Spec
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

// BenchmarkSpecTableMemory reports the live heap each spec kept costs (heap-B/spec): its
// entries in the codec's table, its message, and the server's conversion, after the specs of
// 4,000 of hpa-bench's targets were decoded by the server's codec and converted, each kept by
// the table. Specs from one template differ only in scaleTargetRef; distinct ones also in a
// label selector (workload.Workload.SetDistinctSpecs).
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
				wirecodec.SetSpecTableSize(-1) // empty
				wirecodec.SetSpecTableSize(0)
				s := &Server{cfg: DefaultConfig()}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				kept := make([]*specEntry, n)
				for i, w := range wire {
					m := new(pb.RecommendRequest)
					if err := (wirecodec.Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(w)}, m); err != nil {
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
