package hpactl

import (
	"fmt"
	"os"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/yaml"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/pbconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// manifest is a HorizontalPodAutoscaler manifest read from a file.
type manifest struct {
	namespace, name string
	spec            *pb.HorizontalPodAutoscalerSpec
}

// loadManifest reads an autoscaling/v2 HorizontalPodAutoscaler from a YAML or JSON file with
// the Kubernetes types (so bare numbers are quantities: averageValue: 30) and converts its spec
// to the API message. Unknown fields are errors, to catch typos. An empty namespace is
// "default", as kubectl applies it.
func loadManifest(path string) (*manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := yaml.UnmarshalStrict(b, &hpa); err != nil {
		return nil, fmt.Errorf("parse manifest %s: %w", path, err)
	}
	if hpa.Kind != "HorizontalPodAutoscaler" || hpa.APIVersion != "autoscaling/v2" {
		return nil, fmt.Errorf("manifest %s: want apiVersion autoscaling/v2, kind HorizontalPodAutoscaler; got apiVersion %q, kind %q", path, hpa.APIVersion, hpa.Kind)
	}
	m := &manifest{namespace: hpa.Namespace, name: hpa.Name, spec: pbconv.SpecToProto(&hpa.Spec)}
	if m.namespace == "" {
		m.namespace = "default"
	}
	return m, nil
}
