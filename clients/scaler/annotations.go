package scaler

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// The per-object controls: annotations on any autoscaler (a manifest, an HPA object, a
// CentralHorizontalPodAutoscaler), named in DESIGN.md. Tools outside this repository rely on
// these names; keep them.
const (
	// AnnotationPrefix prefixes every annotation the scaler reads.
	AnnotationPrefix = "hpa-recommender.io/"
	// PausedAnnotation "true" holds the autoscaler at the target's current count.
	PausedAnnotation = AnnotationPrefix + "paused"
	// PausedReplicasAnnotation "N" scales the target to N once and holds it there.
	PausedReplicasAnnotation = AnnotationPrefix + "paused-replicas"
	// PausedScaleInAnnotation "true" lets the autoscaler scale out only.
	PausedScaleInAnnotation = AnnotationPrefix + "paused-scale-in"
	// PausedScaleOutAnnotation "true" lets the autoscaler scale in only.
	PausedScaleOutAnnotation = AnnotationPrefix + "paused-scale-out"
	// FallbackReplicasAnnotation turns the metrics fallback on: "N", "current" or
	// "current-if-higher".
	FallbackReplicasAnnotation = AnnotationPrefix + "fallback-replicas"
	// FallbackAfterAnnotation "K" is how many consecutive syncs whose metrics all failed start
	// the metrics fallback (default DefaultFallbackAfterSyncs).
	FallbackAfterAnnotation = AnnotationPrefix + "fallback-after"
	// SyncPeriodAnnotation is the autoscaler's own sync period (a Go duration in
	// [MinObjectSyncPeriod, MaxObjectSyncPeriod]) instead of Config.SyncPeriod.
	SyncPeriodAnnotation = AnnotationPrefix + "sync-period"
)

// Values and bounds of the annotations.
const (
	FallbackCurrent           = "current"
	FallbackCurrentIfHigher   = "current-if-higher"
	DefaultFallbackAfterSyncs = 3
	MinObjectSyncPeriod       = time.Second
	MaxObjectSyncPeriod       = 10 * time.Minute
)

// Controls are an autoscaler's annotations as the scaler acts on them. An invalid value never
// stops the autoscaler from being served: it is listed in Problems (a condition and an event
// name it) and read as its safest meaning: an unknown mode or an unreadable pause holds the
// autoscaler (or the paused direction); an unreadable fallback turns the fallback off
// (upstream's rule, hold); an unreadable or out-of-bounds sync-period is --sync-period.
type Controls struct {
	// Shadow asks with dryRun and writes nothing (mode: shadow).
	Shadow bool
	// Paused holds the target at its current count; PausedReplicas, when set, scales it to
	// that count first. PausedReplicas wins over Paused.
	Paused         bool
	PausedReplicas *int32
	// PausedScaleIn and PausedScaleOut stop one direction.
	PausedScaleIn, PausedScaleOut bool
	// Fallback is the metrics fallback, nil when off.
	Fallback *FallbackControl
	// SyncPeriod is the autoscaler's own period; 0 means Config.SyncPeriod.
	SyncPeriod time.Duration
	// PrometheusQueries are the queries of the prometheus-query annotations by spec.metrics
	// index (prometheus.go); nil when there are none.
	PrometheusQueries map[int]PrometheusQuery
	// Problems name each invalid annotation and why, sorted; empty when all are valid.
	Problems []string
}

// FallbackControl is the metrics fallback: after After consecutive syncs whose metrics all
// failed, scale to Replicas (Mode ""), keep the current count (FallbackCurrent), or keep the
// current count when it is higher than the last count decided from working metrics
// (FallbackCurrentIfHigher). The count is kept within [minReplicas, maxReplicas].
type FallbackControl struct {
	Mode     string
	Replicas int32
	After    int
}

// String is the annotation's value.
func (f *FallbackControl) String() string {
	if f.Mode != "" {
		return f.Mode
	}
	return strconv.Itoa(int(f.Replicas))
}

// holding reports whether the autoscaler is paused (at its count or at PausedReplicas).
func (c *Controls) holding() bool { return c.Paused || c.PausedReplicas != nil }

// parseControls reads the annotations of one autoscaler.
func parseControls(ann map[string]string) Controls {
	var c Controls
	bad := func(key, format string, args ...any) {
		c.Problems = append(c.Problems, fmt.Sprintf("annotation %s: %q %s", key, ann[key], fmt.Sprintf(format, args...)))
	}
	if v, ok := ann[ModeAnnotation]; ok {
		switch {
		case strings.EqualFold(v, ModeShadow):
			c.Shadow = true
		default:
			c.Paused = true
			bad(ModeAnnotation, "is not a mode (the only mode is %q); the autoscaler is held at its current count until it is fixed", ModeShadow)
		}
	}
	flag := func(key string, dst *bool, safe string) {
		v, ok := ann[key]
		if !ok {
			return
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			*dst = true
			bad(key, "is not \"true\" or \"false\"; read as \"true\" (%s) until it is fixed", safe)
			return
		}
		*dst = b
	}
	flag(PausedAnnotation, &c.Paused, "held at the current count")
	flag(PausedScaleInAnnotation, &c.PausedScaleIn, "no scale-in")
	flag(PausedScaleOutAnnotation, &c.PausedScaleOut, "no scale-out")
	if v, ok := ann[PausedReplicasAnnotation]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err != nil || n < 0 {
			c.Paused = true
			bad(PausedReplicasAnnotation, "is not a replica count (an integer from 0); the autoscaler is held at its current count until it is fixed")
		} else {
			c.PausedReplicas = ptrTo(int32(n))
		}
	}
	if v, ok := ann[FallbackReplicasAnnotation]; ok {
		f := &FallbackControl{After: DefaultFallbackAfterSyncs}
		switch v = strings.TrimSpace(v); v {
		case FallbackCurrent, FallbackCurrentIfHigher:
			f.Mode = v
		default:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				f = nil
				bad(FallbackReplicasAnnotation, "is not a replica count, %q or %q; the metrics fallback is off", FallbackCurrent, FallbackCurrentIfHigher)
			} else {
				f.Replicas = int32(n)
			}
		}
		if s, ok := ann[FallbackAfterAnnotation]; ok && f != nil {
			k, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || k < 1 {
				f = nil
				bad(FallbackAfterAnnotation, "is not a number of syncs (an integer from 1); the metrics fallback is off")
			} else {
				f.After = k
			}
		}
		c.Fallback = f
	}
	if v, ok := ann[SyncPeriodAnnotation]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			bad(SyncPeriodAnnotation, "is not a duration such as \"5s\"; --sync-period applies")
		case d < MinObjectSyncPeriod || d > MaxObjectSyncPeriod:
			bad(SyncPeriodAnnotation, "is outside [%s, %s]; --sync-period applies", MinObjectSyncPeriod, MaxObjectSyncPeriod)
		default:
			c.SyncPeriod = d
		}
	}
	sort.Strings(c.Problems)
	return c
}

func ptrTo[T any](v T) *T { return &v }

// requestSpec is the spec sent to the service: a's, with the paused direction's selectPolicy
// Disabled, so the service decides (and records its stabilization history) exactly as
// upstream does for an HPA whose behavior disables that direction.
func (a *Autoscaler) requestSpec() *pb.HorizontalPodAutoscalerSpec {
	c := a.Controls
	if !c.PausedScaleIn && !c.PausedScaleOut {
		return a.Spec
	}
	spec := proto.Clone(a.Spec).(*pb.HorizontalPodAutoscalerSpec)
	if spec.Behavior == nil {
		spec.Behavior = &pb.HorizontalPodAutoscalerBehavior{}
	}
	disabled := func(r **pb.HPAScalingRules) {
		if *r == nil {
			*r = &pb.HPAScalingRules{}
		}
		(*r).SelectPolicy = ptrTo(recommender.SelectDisabled)
	}
	if c.PausedScaleIn {
		disabled(&spec.Behavior.ScaleDown)
	}
	if c.PausedScaleOut {
		disabled(&spec.Behavior.ScaleUp)
	}
	return spec
}

// fallbackReplicas is the count the metrics fallback f scales to from cur, with lastGood the
// last count decided from working metrics (-1: none yet), kept within [minR, maxR].
func fallbackReplicas(f *FallbackControl, cur, lastGood, minR, maxR int32) int32 {
	n := f.Replicas
	switch f.Mode {
	case FallbackCurrent:
		n = cur
	case FallbackCurrentIfHigher:
		n = max(cur, lastGood)
	}
	return min(max(n, minR), maxR)
}
