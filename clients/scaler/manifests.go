package scaler

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/hpafile"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Autoscaler is one HorizontalPodAutoscaler manifest, as read from the manifests directory.
type Autoscaler struct {
	// Namespace and Name name the autoscaler (the TargetRef); an empty namespace is "default".
	Namespace, Name string
	// HPA is the manifest as decoded, as autoscaling/v2 (an autoscaling/v1 one converted).
	HPA *autoscalingv2.HorizontalPodAutoscaler
	// Spec is HPA.Spec converted to the API message.
	Spec *pb.HorizontalPodAutoscalerSpec
	// Shadow is true when the manifest's hpa-recommender.io/mode annotation is "shadow".
	Shadow bool
	// Controls are the hpa-recommender.io annotations (pause, metrics fallback, sync period),
	// read once per version of the autoscaler.
	Controls Controls
	// Warnings are the loader's warnings of the manifest (a version no longer served), logged
	// at each load.
	Warnings []string
	// Source is the file the manifest came from.
	Source string
	// Object is set when the autoscaler is a Kubernetes object (not a manifest file).
	Object *Object
}

// Key is "namespace/name".
func (a *Autoscaler) Key() string { return a.Namespace + "/" + a.Name }

// LoadManifests reads every *.yaml, *.yml and *.json file of dir (not recursively; names
// starting with "." are skipped, as are the ..data links of a mounted ConfigMap). A file may
// hold several YAML documents and `kind: List`s; empty documents and documents of other kinds
// are skipped, so a directory may also carry other manifests (clients/internal/hpafile reads
// them, as hpactl does; autoscaling/v1 is converted to v2). A HorizontalPodAutoscaler with an
// unknown, duplicate or mistyped field, no name, no scaleTargetRef, or a namespace/name seen
// twice is an error, each problem named with its file, document and field; the other
// autoscalers are still returned, sorted by key, so one bad manifest never stops the rest.
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

// parseManifests decodes the autoscalers of one file with the loader hpactl shares
// (clients/internal/hpafile); an autoscaler without a scaleTargetRef kind and name is one more
// problem of the file.
func parseManifests(path string, b []byte) ([]*Autoscaler, error) {
	hpas, err := hpafile.Parse(path, b)
	var problems hpafile.Problems
	if err != nil && !errors.As(err, &problems) {
		return nil, err
	}
	var out []*Autoscaler
	for _, h := range hpas {
		if ref := h.Object.Spec.ScaleTargetRef; ref.Kind == "" || ref.Name == "" {
			problems = append(problems, h.Problem("spec.scaleTargetRef", "Required value: kind and name"))
			continue
		}
		out = append(out, &Autoscaler{
			Namespace: h.Namespace(),
			Name:      h.Name(),
			HPA:       h.Object,
			Spec:      h.Spec,
			Shadow:    strings.EqualFold(h.Object.Annotations[ModeAnnotation], ModeShadow),
			Controls:  newControls(h.Namespace(), h.Object),
			Source:    path,
			Warnings:  warningLines(h),
		})
	}
	if len(problems) > 0 {
		return out, problems
	}
	return out, nil
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

// warningLines is each warning of h as one line naming its file, document and field.
func warningLines(h *hpafile.HPA) []string {
	var out []string
	for _, w := range h.Warnings {
		out = append(out, w.Error())
	}
	return out
}

// logManifestWarnings logs every warning of the loaded autoscalers.
func (s *Scaler) logManifestWarnings(as []*Autoscaler) {
	for _, a := range as {
		for _, w := range a.Warnings {
			s.log.Warn("manifest warning", "autoscaler", a.Key(), "warning", w)
		}
	}
}
