package scaler

import (
	"maps"
	"slices"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestConfigSources(t *testing.T) {
	for _, tc := range []struct {
		name, source, dir string
		want              []string
		wantErr           string
	}{
		{name: "default with a manifests directory", dir: "/m", want: []string{SourceManifests}},
		{name: "default without one", want: []string{SourceCustom}},
		{name: "several", source: "hpa, custom,hpa", want: []string{SourceHPA, SourceCustom}},
		{name: "unknown", source: "hpa,crd", wantErr: `unknown source "crd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Source: tc.source, ManifestsDir: tc.dir}
			got, err := c.Sources()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Sources() = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	c := DefaultConfig()
	c.Cluster, c.Source, c.Selector = "c1", "manifests", "a in (b"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "--manifests-dir is required by the manifests source") || !strings.Contains(err.Error(), "--selector") {
		t.Errorf("Validate() = %v, want the missing directory and the bad selector", err)
	}
	c.Source, c.Selector = "hpa", "team=web"
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() with the hpa source and no directory = %v", err)
	}
}

func TestSetSourceMergesAndNudges(t *testing.T) {
	w := newWorld(t, nil) // the manifest shop/web-hpa
	obj := func(name string, gen int64) *Autoscaler {
		return hpaAutoscaler(&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Generation: gen}})
	}
	w.s.setSource(SourceHPA, []*Autoscaler{obj("web-hpa", 1), obj("api", 1)})
	if a := w.s.mustAutoscaler(t, "shop/web-hpa"); a.Object != nil {
		t.Errorf("shop/web-hpa comes from %s, want the manifest (the earlier source keeps the name)", a.Source)
	}
	if a := w.s.mustAutoscaler(t, "shop/api"); a.Object == nil || a.Object.Source != SourceHPA {
		t.Errorf("shop/api = %+v, want the HPA object", a)
	}
	if got := w.s.takeNudged(); len(got) != 0 {
		t.Errorf("nudged %v on first sight, want none", got)
	}
	w.s.setSource(SourceHPA, []*Autoscaler{obj("web-hpa", 1), obj("api", 2)})
	if got := w.s.takeNudged(); !slices.Equal(got, []string{"shop/api"}) {
		t.Errorf("nudged %v after api's generation changed, want [shop/api]", got)
	}
	// The manifest goes: the HPA object of the same name takes over; api is gone with its source.
	w.s.SetAutoscalers(nil)
	w.s.setSource(SourceHPA, []*Autoscaler{obj("web-hpa", 1)})
	if a := w.s.mustAutoscaler(t, "shop/web-hpa"); a.Object == nil {
		t.Error("shop/web-hpa still the manifest after the manifest was removed")
	}
	if _, ok := w.s.Autoscaler("shop/api"); ok {
		t.Error("shop/api still loaded after its object was deleted")
	}
}

// TestObjectSetPublishesChanges: before its informers have synced an object set publishes
// nothing; then the whole set; then each change of one object, merged with the other sources
// as setSource merges them.
func TestObjectSetPublishesChanges(t *testing.T) {
	w := newWorld(t, nil) // the manifest shop/web-hpa
	hpa := func(name string, gen int64, annotations map[string]string) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Generation: gen, Annotations: annotations}}
	}
	loaded := func() bool { w.s.mu.Lock(); defer w.s.mu.Unlock(); return w.s.loaded }
	w.s.mu.Lock()
	w.s.expected = []string{SourceManifests, SourceHPA}
	w.s.mu.Unlock()
	w.s.SetAutoscalers([]*Autoscaler{w.s.mustAutoscaler(t, "shop/web-hpa")})
	set := newObjectSet(w.s, SourceHPA)
	set.upsert(hpa("api", 1, nil))
	set.upsert(hpa("web-hpa", 1, nil))
	if _, ok := w.s.Autoscaler("shop/api"); ok || loaded() {
		t.Fatalf("shop/api loaded (or the scaler ready: %v) before the set synced", loaded())
	}
	set.publishAll()
	if a := w.s.mustAutoscaler(t, "shop/api"); a.Object == nil || !loaded() {
		t.Errorf("shop/api = %+v, ready %v after the set synced; want the object, ready", a, loaded())
	}
	if a := w.s.mustAutoscaler(t, "shop/web-hpa"); a.Object != nil {
		t.Error("shop/web-hpa is the HPA object, want the manifest (the earlier source keeps the name)")
	}

	set.upsert(hpa("api", 2, nil))
	set.upsert(hpa("db", 1, nil))
	set.upsert(hpa("web-hpa", 1, map[string]string{"a": "b"})) // not loaded: not nudged
	if got := w.s.takeNudged(); !slices.Equal(got, []string{"shop/api"}) {
		t.Errorf("nudged %v, want [shop/api] (its generation changed)", got)
	}
	if a := w.s.mustAutoscaler(t, "shop/api"); a.HPA.Generation != 2 {
		t.Errorf("shop/api generation %d, want 2", a.HPA.Generation)
	}
	w.s.mustAutoscaler(t, "shop/db")
	w.s.target("shop/db") // state kept between syncs

	set.remove(hpa("db", 1, nil))
	set.remove(cache.DeletedFinalStateUnknown{Key: "shop/api"})
	for _, key := range []string{"shop/db", "shop/api"} {
		if _, ok := w.s.Autoscaler(key); ok {
			t.Errorf("%s still loaded after its object was deleted", key)
		}
	}
	w.s.mu.Lock()
	_, state := w.s.targets["shop/db"]
	nsKeys := slices.Sorted(maps.Keys(w.s.byNamespace["shop"]))
	w.s.mu.Unlock()
	if state {
		t.Error("the state of shop/db is kept after its object was deleted")
	}
	if want := []string{"shop/web-hpa"}; !slices.Equal(nsKeys, want) {
		t.Errorf("namespace shop has %v, want %v", nsKeys, want)
	}

	// The manifest goes: the HPA object of the same name takes over.
	w.s.SetAutoscalers(nil)
	if a := w.s.mustAutoscaler(t, "shop/web-hpa"); a.Object == nil || a.HPA.Annotations["a"] != "b" {
		t.Errorf("shop/web-hpa = %+v after the manifest was removed, want the HPA object as last updated", a)
	}
}
