package hpactl

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/hpafile"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// manifest is a HorizontalPodAutoscaler manifest read from a file.
type manifest struct {
	namespace, name string
	spec            *pb.HorizontalPodAutoscalerSpec
}

// loadManifests reads the HorizontalPodAutoscalers of a YAML or JSON file as kubectl reads a
// file, with the loader the scaler shares (clients/internal/hpafile): several documents and
// `kind: List`s, other kinds skipped, autoscaling/v1 converted to v2 as the API server converts
// it, the Kubernetes types (so bare numbers are quantities: averageValue: 30). Every unknown,
// duplicate or mistyped field of the file is an error, reported together (manifestError). With
// name, only the autoscalers of that name; without, every one. An empty namespace is
// "default", as kubectl applies it.
// Each warning of the file (a version the API server no longer serves) is a line on warn.
func loadManifests(path, name string, warn io.Writer) ([]*manifest, error) {
	hpas, err := loadHPAs(path, warn)
	if err != nil {
		return nil, err
	}
	var out []*manifest
	var names []string
	for _, h := range hpas {
		names = append(names, h.Key())
		if name == "" || h.Name() == name {
			out = append(out, &manifest{namespace: h.Namespace(), name: h.Name(), spec: h.Spec})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("manifest %s holds no HorizontalPodAutoscaler named %q (it holds %s)", path, name, strings.Join(names, ", "))
	}
	return out, nil
}

// loadHPAs reads the HorizontalPodAutoscalers of the file at path, writing its warnings on
// warn; a file with a problem or without an autoscaler is an error.
func loadHPAs(path string, warn io.Writer) ([]*hpafile.HPA, error) {
	hpas, err := hpafile.Load(path)
	var problems hpafile.Problems
	switch {
	case errors.As(err, &problems):
		return nil, &manifestError{path: path, problems: problems}
	case err != nil:
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if len(hpas) == 0 {
		return nil, fmt.Errorf("manifest %s holds no HorizontalPodAutoscaler (autoscaling/v2, v2beta2, v2beta1 or v1)", path)
	}
	printWarnings(warn, hpas)
	return hpas, nil
}

// manifestError is every problem of a manifest file.
type manifestError struct {
	path     string
	problems hpafile.Problems
}

// Error is one line per problem under a heading naming the file:
//
//	parse manifest hpa.yaml: 2 problems:
//	  document 0 (HorizontalPodAutoscaler shop/web): spec.maxReplica: unknown field
//	  ...
func (e *manifestError) Error() string {
	var b strings.Builder
	n := "1 problem"
	if len(e.problems) != 1 {
		n = fmt.Sprintf("%d problems", len(e.problems))
	}
	fmt.Fprintf(&b, "parse manifest %s: %s:", e.path, n)
	for _, p := range e.problems {
		fmt.Fprintf(&b, "\n  %s: %s", p.Where(), p.Detail())
	}
	return b.String()
}

// printWarnings writes each warning of hpas as a line `warning: FILE: document N (...): field: message`.
func printWarnings(w io.Writer, hpas []*hpafile.HPA) {
	for _, h := range hpas {
		for _, p := range h.Warnings {
			fmt.Fprintf(w, "warning: %s\n", p.Error())
		}
	}
}
