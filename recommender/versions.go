package recommender

import (
	"fmt"
	"strconv"
	"strings"
)

// The Kubernetes releases whose HPA controller a decision can follow (Options.KubernetesVersion).
// Each was read in that release's own source (docs/ALGORITHM.md, "Kubernetes versions").
const (
	OldestKubernetesVersion = "1.34"
	NewestKubernetesVersion = "1.38"

	oldestMinor = 34
	newestMinor = 38
)

// KubernetesVersions returns the supported releases, oldest first: "1.34" ... "1.38".
func KubernetesVersions() []string {
	out := make([]string, 0, newestMinor-oldestMinor+1)
	for m := oldestMinor; m <= newestMinor; m++ {
		out = append(out, "1."+strconv.Itoa(m))
	}
	return out
}

// parseMinor returns the minor version of a supported release "1.N". It runs for every request
// that names a release, so its error is built only when there is one.
func parseMinor(s string) (int, error) {
	rest, ok := strings.CutPrefix(s, "1.")
	m, err := strconv.Atoi(rest)
	if !ok || len(rest) > 3 || err != nil || strconv.Itoa(m) != rest || m < oldestMinor || m > newestMinor {
		return 0, fmt.Errorf("unsupported Kubernetes version %q: supported are %s to %s", s, OldestKubernetesVersion, NewestKubernetesVersion)
	}
	return m, nil
}

// KubernetesVersionOf turns a server's reported version (a version.Info's major and minor, as
// the discovery API returns them: "1" and "35" or "35+") into the form Options take ("1.35").
// It does not check that the release is supported; RulesFor does.
func KubernetesVersionOf(major, minor string) string {
	return strings.TrimSpace(major) + "." + strings.TrimRight(strings.TrimSpace(minor), "+")
}

// ZeroReplicas is how a release treats a target at zero replicas and the ScaledToZero
// condition (R-REC-4(a)).
type ZeroReplicas int

const (
	// ZeroByMinReplicas (1.34, 1.35): at zero replicas scaling is disabled when minReplicas is
	// not 0; with minReplicas 0 the metrics are computed whatever their type. No ScaledToZero
	// condition exists, and nothing lifts a resumed count to minReplicas.
	ZeroByMinReplicas ZeroReplicas = iota
	// ZeroDisabled (1.36 on, HPAScaleToZero off): scaling is always disabled at zero replicas,
	// and the ScaledToZero condition is removed.
	ZeroDisabled
	// ZeroByCondition (1.36 on, HPAScaleToZero on): the controller keeps the ScaledToZero
	// condition and resumes from zero only when it scaled the target there itself
	// (kubernetes/kubernetes#135118).
	ZeroByCondition
)

// Rules holds every way the supported releases decide differently, one switch per difference.
// RulesFor derives it once per decision from the options; the engine reads these switches and
// never compares versions itself. docs/ALGORITHM.md tables each switch with its releases and
// upstream change.
type Rules struct {
	// Version is the release the rules are those of ("1.34" ... "1.38").
	Version string
	// IgnoreSucceededPods: pod grouping ignores Succeeded pods as it ignores Failed ones
	// (R-GRP rule 1); before, a Succeeded pod fell through to the later rules (usually
	// "missing"). 1.38 on: kubernetes/kubernetes#141302.
	IgnoreSucceededPods bool
	// MissingContainerFails: a ContainerResource metric fails when a pod lacks the named
	// container ("container c not found in Pod p"); before, such a pod counted with a request
	// of 0. 1.35 on: kubernetes/kubernetes#133415.
	MissingContainerFails bool
	// PodOverheadInRequests: a pod's pod-level requests include its spec.overhead (R-RES-1).
	// 1.34 to 1.37; 1.38 excludes it: kubernetes/kubernetes#142154.
	PodOverheadInRequests bool
	// SidecarRequestsFirst: summing container requests visits restartable init containers
	// before the regular ones, so a missing request names the sidecar first (the condition
	// message only). 1.38 on (podutil.ContainerIter in calculatePodRequestsFromContainers).
	SidecarRequestsFirst bool
	// ObjectAverageValueKindName: an Object metric with an AverageValue target is named
	// "<Kind> metric <name>" in conditions and reasons; before, with the External wording
	// "external metric <name>(<selector>)" (HPA-ALGORITHM §13.17). 1.38 on (horizontal.go,
	// computeStatusForObjectMetric).
	ObjectAverageValueKindName bool
	// ConfigurableTolerance is the HPAConfigurableTolerance feature gate: behavior.*.tolerance
	// overrides the tolerance (R-TOL-3). Off by default in 1.34, on from 1.35
	// (kubernetes/kubernetes#133128), locked on from 1.37 (kubernetes/kubernetes#140107).
	ConfigurableTolerance bool
	// Zero is the treatment of a target at zero replicas: ZeroByMinReplicas before 1.36, then
	// by the HPAScaleToZero feature gate, off by default until 1.37
	// (kubernetes/kubernetes#139648).
	Zero ZeroReplicas
}

// RulesFor derives the rules of opts.KubernetesVersion (empty: the newest) with its feature
// gates set as opts.HPAConfigurableTolerance and opts.HPAScaleToZero say (nil: the release's
// default). It fails for an unsupported version and for turning off a gate the release locks
// on; the messages name the option and what is allowed.
func RulesFor(opts Options) (Rules, error) {
	minor := newestMinor
	if opts.KubernetesVersion != "" {
		m, err := parseMinor(opts.KubernetesVersion)
		if err != nil {
			return Rules{}, err
		}
		minor = m
	}
	r := Rules{
		Version:                    "1." + strconv.Itoa(minor),
		IgnoreSucceededPods:        minor >= 38,
		MissingContainerFails:      minor >= 35,
		PodOverheadInRequests:      minor < 38,
		SidecarRequestsFirst:       minor >= 38,
		ObjectAverageValueKindName: minor >= 38,
		ConfigurableTolerance:      minor >= 35,
	}
	if g := opts.HPAConfigurableTolerance; g != nil {
		if !*g && minor >= 37 {
			return Rules{}, fmt.Errorf("the HPAConfigurableTolerance feature gate is GA and locked on in Kubernetes %s; it can be turned off only for 1.34 to 1.36", r.Version)
		}
		r.ConfigurableTolerance = *g
	}
	scaleToZero := minor >= 37
	if g := opts.HPAScaleToZero; g != nil {
		scaleToZero = *g
	}
	switch {
	case minor < 36:
		r.Zero = ZeroByMinReplicas
	case scaleToZero:
		r.Zero = ZeroByCondition
	default:
		r.Zero = ZeroDisabled
	}
	return r, nil
}

// rulesOf is RulesFor for options already validated (ValidateOptions); should they be invalid
// anyway, the newest release's rules apply rather than a panic.
func rulesOf(opts Options) Rules {
	r, err := RulesFor(opts)
	if err != nil {
		if r, err = RulesFor(Options{KubernetesVersion: opts.KubernetesVersion}); err != nil {
			r, _ = RulesFor(Options{})
		}
	}
	return r
}
