package server

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	"github.com/hpa-recommender/hpa-recommender/internal/wirecodec"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// maxCachedSpecs bounds the cache of specs the codec does not share unless Config.CachedSpecs
// says otherwise; when full, an entry is dropped at random. An entry is a few kilobytes.
const maxCachedSpecs = 4096

// specCache remembers the conversion and validation of the specs seen recently: every
// Recommend carries its target's full spec, and converting and validating one (quantities,
// label selectors, policies) costs more than encoding it. A spec the server's codec decoded and
// shares (wirecodec.Interned) keeps its conversion attached to the message (wirecodec.Attach),
// found by address, for as long as the codec keeps the message; one the codec composed of a
// template (wirecodec.Template) is converted as the template's entry with its own
// scaleTargetRef (convertShared). Any other spec is found by its deterministic wire encoding.
// Equal encodings are equal specs, so a hit returns exactly what converting would. The zero
// value is ready to use.
type specCache struct {
	mu    sync.RWMutex
	m     map[string]*specEntry // specs the codec does not share, by their encoding
	limit int                   // Config.CachedSpecs: 0, maxCachedSpecs; negative, none
}

// specEntry is one converted spec. Everything in it is shared and must not be modified:
// recommender.Decide only reads its spec and its defaulted spec.
type specEntry struct {
	spec      *recommender.Spec
	defaulted *recommender.Spec // recommender.SetDefaults(spec) for Decide (Input.Defaulted); nil for an invalid spec
	// conv are the conversion violations (paths under "spec"); when there are none, invalid
	// are ValidateSpec's.
	conv, invalid []apiconv.FieldViolation
}

var deterministic = proto.MarshalOptions{Deterministic: true}

func convertSpec(s *pb.HorizontalPodAutoscalerSpec) *specEntry {
	spec, conv := apiconv.SpecFromProto("spec", s)
	e := &specEntry{spec: spec, conv: conv}
	if len(e.conv) == 0 {
		e.invalid = apiconv.FieldErrors(recommender.ValidateSpec(e.spec, "spec"))
	}
	if len(e.conv) == 0 && len(e.invalid) == 0 {
		e.defaulted = recommender.SetDefaults(e.spec) // only a valid spec is decided on
	}
	return e
}

func (c *specCache) get(s *pb.HorizontalPodAutoscalerSpec) *specEntry {
	if v, shared := wirecodec.Attachment(s); shared {
		if e, ok := v.(*specEntry); ok {
			return e
		}
		// The codec's spec, met for the first time (or by two calls at once: both convert it,
		// to the same entry).
		e := c.convertShared(s)
		wirecodec.Attach(s, e)
		return e
	}
	limit := c.limit
	switch {
	case limit == 0:
		limit = maxCachedSpecs
	case limit < 0:
		return convertSpec(s)
	}
	b, err := deterministic.Marshal(s)
	if err != nil {
		return convertSpec(s)
	}
	c.mu.RLock()
	e := c.m[string(b)]
	c.mu.RUnlock()
	if e != nil {
		return e
	}
	e = convertSpec(s)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*specEntry)
	}
	for victim := range c.m { // Go's map iteration starts at a random place
		if len(c.m) < limit {
			break
		}
		delete(c.m, victim)
	}
	c.m[string(b)] = e
	c.mu.Unlock()
	return e
}

// convertShared is convertSpec for a spec the codec shares: when the codec composed it of a
// template and a scaleTargetRef (wirecodec.Template), and both are valid, it is the template's
// entry (converted once, and attached to the template) with that reference, which is what
// converting the whole spec gives. Otherwise it converts the whole spec.
func (c *specCache) convertShared(s *pb.HorizontalPodAutoscalerSpec) *specEntry {
	if t := wirecodec.Template(s); t != nil {
		if e := c.get(t).withRef(apiconv.ObjectRefFromProto(s.GetScaleTargetRef())); e != nil {
			return e
		}
	}
	return convertSpec(s)
}

// withRef returns e, the entry of a spec without scaleTargetRef, for the same spec with ref;
// nil when e or ref is invalid (the violations then need the whole spec converted).
func (e *specEntry) withRef(ref recommender.ObjectReference) *specEntry {
	if e.defaulted == nil || !recommender.ObjectReferenceValid(ref) {
		return nil
	}
	n := &struct {
		e               specEntry
		spec, defaulted recommender.Spec
	}{spec: *e.spec, defaulted: *e.defaulted}
	n.spec.ScaleTargetRef, n.defaulted.ScaleTargetRef = ref, ref
	n.e = specEntry{spec: &n.spec, defaulted: &n.defaulted}
	return &n.e
}

// decisionInput converts and validates a RecommendRequest's decision inputs: the same input,
// options and violations (in the same order) as apiconv.RecommendFromProto followed, when conversion
// found nothing, by recommender.ValidateInput; the spec part comes from the cache. Pods and
// observations are converted into buf (apiconv.RecommendParts), when the spec is set.
func (s *Server) decisionInput(req *pb.RecommendRequest, buf *apiconv.Buffers) (recommender.Input, recommender.Options, []apiconv.FieldViolation) {
	limits := recommender.Limits{MaxPods: s.cfg.MaxPods}
	if req.GetSpec() == nil {
		return apiconv.DecisionInput(req, s.cfg.Defaults, apiconv.Limits{MaxPods: s.cfg.MaxPods})
	}
	e := s.specs.get(req.GetSpec())
	in, opts, conv := apiconv.RecommendParts(req, s.cfg.Defaults, buf)
	in.Spec, in.Defaulted = e.spec, e.defaulted
	if len(e.conv) > 0 || len(conv) > 0 {
		return in, opts, append(slices.Clone(e.conv), conv...)
	}
	return in, opts, append(slices.Clone(e.invalid), apiconv.FieldErrors(recommender.ValidateObservations(&in, "", limits))...)
}

// applier is a store that can skip Update's copies: boltstore.Apply hands fn its cached record
// itself, which the server's UpdateFuncs only read (boltstore.Check, run after the server's
// tests, verifies that nothing modified it), and returns no result; memstore.Apply does not
// decode the record it wrote back into a result.
type applier interface {
	Apply(ctx context.Context, key store.Key, fn store.UpdateFunc) error
}

// apply is store.Update for callers that ignore its result.
func (s *Server) apply(ctx context.Context, key store.Key, fn store.UpdateFunc) error {
	if a, ok := s.store.(applier); ok {
		return a.Apply(ctx, key, fn)
	}
	_, err := s.store.Update(ctx, key, fn)
	return err
}
