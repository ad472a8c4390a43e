package recommender

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FuzzCleanChecksAgree checks that the allocation-free fast paths (podsClean,
// podSamplesClean) say "clean" exactly when the full checks (checkPods, checkPodSamples, which
// the fast paths skip) find nothing (podsClean may
// say "not clean" of a valid pod with more than 16 containers: the full check then decides), over pods and
// samples built from a few fuzzed knobs that hit every rule.
func FuzzCleanChecksAgree(f *testing.F) {
	f.Add(uint8(3), uint8(1), uint8(0), uint8(0), uint8(0), int64(500), int64(0))
	f.Add(uint8(5), uint8(2), uint8(1), uint8(1), uint8(0), int64(-1), int64(-5))
	f.Add(uint8(2), uint8(17), uint8(0), uint8(2), uint8(3), int64(100), int64(1))
	f.Add(uint8(4), uint8(1), uint8(2), uint8(3), uint8(1), int64(0), int64(0))
	f.Add(uint8(4), uint8(3), uint8(4), uint8(4), uint8(2), int64(1), int64(0))
	f.Add(uint8(4), uint8(2), uint8(0), uint8(130), uint8(0x80), int64(100), int64(0)) // shared lists (130: bit 7, Running), a bad init container on the last pod
	f.Add(uint8(4), uint8(2), uint8(0), uint8(130), uint8(0), int64(100), int64(0))    // shared lists, clean
	f.Fuzz(func(t *testing.T, nPods, nContainers, nameMode, phaseMode, initMode uint8, req, window int64) {
		n := int(nPods % 8)
		pods := make([]Pod, n)
		samples := make([]PodSample, n)
		phases := []string{PodRunning, PodPending, "", "Bogus", PodUnknown}
		for i := range pods {
			name := fmt.Sprintf("p%d", i)
			switch {
			case nameMode%5 == 1 && i == n-1:
				name = "" // empty name
			case nameMode%5 == 2 && i == n-1 && i > 0:
				name = "p0" // duplicate
			}
			pods[i] = Pod{Name: name, Phase: phases[int(phaseMode)%len(phases)*boolInt(i == 0)]}
			for c := range int(nContainers % 20) {
				cname := fmt.Sprintf("c%d", c)
				if nameMode%5 == 3 && c == 1 {
					cname = "c0"
				}
				if nameMode%5 == 4 && c == 0 {
					cname = ""
				}
				reqs := map[string]resource.Quantity{"cpu": *resource.NewMilliQuantity(req, resource.DecimalSI)}
				if req == 7 {
					reqs[""] = resource.MustParse("1")
				}
				pods[i].Containers = append(pods[i].Containers, Container{Name: cname, Requests: reqs})
			}
			switch initMode % 4 {
			case 1:
				pods[i].InitContainers = []Container{{Name: "c0"}} // clashes with an app container
			case 2:
				pods[i].InitContainers = []Container{{Name: "init"}}
			case 3:
				pods[i].Requests = map[string]resource.Quantity{"cpu": *resource.NewMilliQuantity(req, resource.DecimalSI)}
			}
			if phaseMode&0x80 != 0 && i > 0 {
				// As the server converts a request that repeats a container list: one list.
				pods[i].Containers = pods[0].Containers
			}
			if initMode&0x80 != 0 && i == n-1 {
				pods[i].InitContainers = []Container{{Name: ""}} // unnamed: invalid on the last pod only
			}
			samples[i] = PodSample{Pod: name, Window: time.Duration(window) * time.Second}
		}
		// podsClean may only be conservative for pods with more containers than it checks inline.
		manyContainers := int(nContainers%20)+boolInt(initMode%4 == 1 || initMode%4 == 2 || initMode&0x80 != 0) > 16
		if got, want := podsClean(pods, map[string]struct{}{}), len(checkPods(pods, nil)) == 0; got != want && !(want && manyContainers) {
			t.Errorf("podsClean = %v, validatePods found nothing = %v, pods %+v", got, want, pods)
		}
		if got, want := podSamplesClean(samples, map[string]struct{}{}), len(checkPodSamples(samples, nil)) == 0; got != want {
			t.Errorf("podSamplesClean = %v, validatePodSamples found nothing = %v, samples %+v", got, want, samples)
		}
		// ValidateObservations builds field paths only for a part its fast checks reject: it
		// must report what the full checks do, with the paths they are given, in their order,
		// with and without a pod limit (the knobs make up to 7 pods; the seeds up to 5).
		for _, limits := range []Limits{{}, {MaxPods: 3}} {
			in := &Input{Pods: pods, Metrics: []Observation{{}, {PodSamples: samples}}}
			want := toFieldErrors(append(validatePods(pods, field.NewPath("pods"), limits),
				validatePodSamples(samples, field.NewPath("metrics").Index(1).Child("podValues"), limits)...))
			if got := ValidateObservations(in, "", limits); !reflect.DeepEqual(got, want) {
				t.Errorf("ValidateObservations with %+v = %v, the full checks find %v", limits, got, want)
			}
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestObjectReferenceValidAgrees checks that ObjectReferenceValid, which builds no field path,
// says "valid" exactly when validateObjectReference (what ValidateSpec runs on a set
// scaleTargetRef) finds nothing, for references that break each rule alone.
func TestObjectReferenceValidAgrees(t *testing.T) {
	segments := []string{"", "web", "Deployment", ".", "..", "a/b", "a%b", "web-1.v2", "..x", "x.."}
	for _, kind := range segments {
		for _, name := range segments {
			ref := ObjectReference{APIVersion: "apps/v1", Kind: kind, Name: name}
			want := len(validateObjectReference(ref, nil)) == 0
			if got := ObjectReferenceValid(ref); got != want {
				t.Errorf("ObjectReferenceValid(%+v) = %v, validateObjectReference found nothing = %v", ref, got, want)
			}
		}
	}
	if !ObjectReferenceValid(ObjectReference{}) {
		t.Error("the zero reference (none) is not valid")
	}
	if ObjectReferenceValid(ObjectReference{APIVersion: "apps/v1"}) {
		t.Error("a reference with an API version but no kind or name is valid")
	}
}
