package server

import (
	"context"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// maxCachedSpecs bounds the cache of specs unless Config.CachedSpecs says otherwise; when
// full, an entry is dropped at random. An entry is a few kilobytes.
const maxCachedSpecs = 4096

// specCache remembers the conversion and validation of the specs seen recently: every
// Recommend carries its target's full spec, and converting and validating one (quantities,
// label selectors, policies) costs more than encoding it. It is keyed by content: a spec's
// wire encoding without its scaleTargetRef, so that the many targets of one fleet whose specs
// differ only in what they scale share an entry, to which each call adds its own reference
// (withRef). Equal encodings are equal specs, so a hit returns exactly what converting would.
// The Server owns it (Server.specs); the zero value is ready to use.
type specCache struct {
	mu    sync.RWMutex
	m     map[string]*specEntry // by the spec's encoding without scaleTargetRef
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

// get returns s's entry: the cached one of its spec without scaleTargetRef, with s's
// reference; or s converted whole when that entry or the reference is invalid (their
// violations, in order, need the whole spec), or when the cache is off.
func (c *specCache) get(s *pb.HorizontalPodAutoscalerSpec) *specEntry {
	limit := c.limit
	switch {
	case limit == 0:
		limit = maxCachedSpecs
	case limit < 0:
		return convertSpec(s)
	}
	key, err := s.MarshalVT()
	if err != nil {
		return convertSpec(s)
	}
	// MarshalVT writes fields in number order: scale_target_ref, field 1, comes first.
	if num, typ, n := protowire.ConsumeTag(key); n > 0 && num == 1 && typ == protowire.BytesType {
		if m := protowire.ConsumeFieldValue(num, typ, key[n:]); m >= 0 {
			key = key[n+m:]
		}
	}
	c.mu.RLock()
	e := c.m[string(key)]
	c.mu.RUnlock()
	if e == nil {
		// Converted from a copy decoded from key: the entry outlives the call, and a
		// request's strings share its bytes (codec.unmarshalRecommend).
		var tmpl pb.HorizontalPodAutoscalerSpec
		if err := tmpl.UnmarshalVT(key); err != nil {
			return convertSpec(s)
		}
		e = convertSpec(&tmpl)
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
		c.m[string(key)] = e
		c.mu.Unlock()
	}
	if s.ScaleTargetRef == nil {
		return e
	}
	ref := apiconv.ObjectRefFromProto(s.ScaleTargetRef)
	ref.APIVersion, ref.Kind, ref.Name = strings.Clone(ref.APIVersion), strings.Clone(ref.Kind), strings.Clone(ref.Name)
	if w := e.withRef(ref); w != nil {
		return w
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
// observations are converted by apiconv.RecommendParts, when the spec is set.
func (s *Server) decisionInput(req *pb.RecommendRequest) (recommender.Input, recommender.Options, []apiconv.FieldViolation) {
	limits := recommender.Limits{MaxPods: s.cfg.MaxPods}
	if req.GetSpec() == nil {
		return apiconv.DecisionInput(req, s.cfg.Defaults, apiconv.Limits{MaxPods: s.cfg.MaxPods})
	}
	e := s.specs.get(req.GetSpec())
	in, opts, conv := apiconv.RecommendParts(req, s.cfg.Defaults)
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
