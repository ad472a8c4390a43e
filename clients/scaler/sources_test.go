package scaler

import (
	"slices"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
