package scaler

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/pbconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Autoscaler is one HorizontalPodAutoscaler manifest, as read from the manifests directory.
type Autoscaler struct {
	// Namespace and Name name the autoscaler (the TargetRef); an empty namespace is "default".
	Namespace, Name string
	// HPA is the manifest as decoded.
	HPA *autoscalingv2.HorizontalPodAutoscaler
	// Spec is HPA.Spec converted to the API message.
	Spec *pb.HorizontalPodAutoscalerSpec
	// Shadow is true when the manifest's hpa-recommender.io/mode annotation is "shadow".
	Shadow bool
	// Source is the file the manifest came from.
	Source string
	// Object is set when the autoscaler is a Kubernetes object (not a manifest file).
	Object *Object
}

// Key is "namespace/name".
func (a *Autoscaler) Key() string { return a.Namespace + "/" + a.Name }

// LoadManifests reads every *.yaml, *.yml and *.json file of dir (not recursively; names
// starting with "." are skipped, as are the ..data links of a mounted ConfigMap). A file may
// hold several YAML documents; empty documents and documents of other kinds are skipped, so a
// directory may also carry other manifests. An autoscaling/v2 HorizontalPodAutoscaler with an
// unknown field, no name, no scaleTargetRef, or a namespace/name seen twice is an error; the
// other autoscalers are still returned, sorted by key, so one bad manifest never stops the
// rest.
func LoadManifests(dir string) ([]*Autoscaler, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read manifests directory: %w", err)
	}
	var out []*Autoscaler
	var errs []error
	seen := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		switch strings.ToLower(filepath.Ext(name)) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err != nil || fi.IsDir() {
			continue // a dangling link or a directory
		}
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", path, err))
			continue
		}
		as, err := parseManifests(path, b)
		if err != nil {
			errs = append(errs, err)
		}
		for _, a := range as {
			if prev, dup := seen[a.Key()]; dup {
				errs = append(errs, fmt.Errorf("%s: autoscaler %s also defined in %s; both ignored", path, a.Key(), prev))
				out = slices.DeleteFunc(out, func(o *Autoscaler) bool { return o.Key() == a.Key() })
				continue
			}
			seen[a.Key()] = path
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *Autoscaler) int { return strings.Compare(a.Key(), b.Key()) })
	return out, errors.Join(errs...)
}

// parseManifests decodes the documents of one file.
func parseManifests(path string, b []byte) ([]*Autoscaler, error) {
	r := utilyaml.NewYAMLReader(bufioReader(b))
	var out []*Autoscaler
	var errs []error
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", path, i, err))
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", path, i, err))
			continue
		}
		if meta.APIVersion == "" && meta.Kind == "" {
			continue // comments only
		}
		if meta.Kind != "HorizontalPodAutoscaler" {
			continue
		}
		if meta.APIVersion != "autoscaling/v2" {
			errs = append(errs, fmt.Errorf("%s: document %d: HorizontalPodAutoscaler %s: only autoscaling/v2 is supported", path, i, meta.APIVersion))
			continue
		}
		var hpa autoscalingv2.HorizontalPodAutoscaler
		if err := yaml.UnmarshalStrict(doc, &hpa); err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", path, i, err))
			continue
		}
		if hpa.Name == "" {
			errs = append(errs, fmt.Errorf("%s: document %d: metadata.name is required", path, i))
			continue
		}
		ref := hpa.Spec.ScaleTargetRef
		if ref.Kind == "" || ref.Name == "" {
			errs = append(errs, fmt.Errorf("%s: %s: spec.scaleTargetRef needs kind and name", path, hpa.Name))
			continue
		}
		if hpa.Namespace == "" {
			hpa.Namespace = "default"
		}
		out = append(out, &Autoscaler{
			Namespace: hpa.Namespace,
			Name:      hpa.Name,
			HPA:       &hpa,
			Spec:      pbconv.SpecToProto(&hpa.Spec),
			Shadow:    strings.EqualFold(hpa.Annotations[ModeAnnotation], ModeShadow),
			Source:    path,
		})
	}
	return out, errors.Join(errs...)
}

// dirDigest hashes the names and contents of the manifest files of dir, so a reload happens
// only when something changed (a ConfigMap update swaps a symlink: mtimes are unreliable).
func dirDigest(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
