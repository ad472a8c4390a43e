package hpafile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	autoscalingv2beta1 "k8s.io/api/autoscaling/v2beta1"
	autoscalingv2beta2 "k8s.io/api/autoscaling/v2beta2"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/pbconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// DefaultNamespace is the namespace of an autoscaler whose manifest names none, as kubectl
// applies it.
const DefaultNamespace = "default"

// HPA is one HorizontalPodAutoscaler of a file.
type HPA struct {
	// Where it was read.
	Location
	// APIVersion is the version it was written in: autoscaling/v2, autoscaling/v2beta2,
	// autoscaling/v2beta1 or autoscaling/v1.
	APIVersion string
	// Warnings are what is valid but worth telling its user, each at its field: a version the
	// API server no longer serves (v2beta2, v2beta1). The callers show them (hpactl on stderr,
	// the scaler in its log).
	Warnings []*Problem
	// Object is the autoscaler as autoscaling/v2 (converted from another version when written so), its
	// namespace set (DefaultNamespace when the manifest names none).
	Object *autoscalingv2.HorizontalPodAutoscaler
	// NamespaceWritten is whether the manifest names its namespace; without one Object's is
	// DefaultNamespace, and a tool that writes the manifest back (hpactl convert) leaves it out.
	NamespaceWritten bool
	// Spec is Object.Spec converted to the API message.
	Spec *pb.HorizontalPodAutoscalerSpec
}

// Namespace is the autoscaler's namespace.
func (h *HPA) Namespace() string { return h.Object.Namespace }

// Name is the autoscaler's name.
func (h *HPA) Name() string { return h.Object.Name }

// Key is "namespace/name".
func (h *HPA) Key() string { return h.Object.Namespace + "/" + h.Object.Name }

// Problem is a problem of this autoscaler found by its user (the scaler's own checks), at field.
func (h *HPA) Problem(field, msg string) *Problem {
	return &Problem{Location: h.Location, Kind: "HorizontalPodAutoscaler", Namespace: h.Namespace(), Name: h.Name(), Field: field, Message: msg}
}

// Location is a place in a manifest file.
type Location struct {
	// Source is the file.
	Source string
	// Doc is the index of the YAML document in the file, from 0 ("---" separates documents).
	Doc int
	// Item is the index in the items of a `kind: List` document, -1 outside a List.
	Item int
}

// Problem is one thing wrong with one document (or List item) of a manifest file.
type Problem struct {
	Location
	// Kind, Namespace and Name are the object's, as far as they are known.
	Kind, Namespace, Name string
	// Field is the path of the field at fault (spec.metrics[0].type), empty for the whole
	// document.
	Field string
	// Message says what is wrong.
	Message string
}

// Where is the document, List item and object of the problem, without the file:
// `document 1 (HorizontalPodAutoscaler shop/web)`.
func (p *Problem) Where() string {
	var b strings.Builder
	fmt.Fprintf(&b, "document %d", p.Doc)
	if p.Item >= 0 {
		fmt.Fprintf(&b, " items[%d]", p.Item)
	}
	if p.Kind != "" || p.Name != "" {
		b.WriteString(" (")
		b.WriteString(p.Kind)
		if p.Name != "" {
			if p.Kind != "" {
				b.WriteString(" ")
			}
			if p.Namespace != "" {
				b.WriteString(p.Namespace + "/")
			}
			b.WriteString(p.Name)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Detail is the field and the message: `spec.maxReplica: unknown field`.
func (p *Problem) Detail() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

func (p *Problem) Error() string { return p.Source + ": " + p.Where() + ": " + p.Detail() }

// Problems are every problem of a file, in the order of the file.
type Problems []*Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Load reads the file at path and parses it with Parse; path "-" reads standard input, as
// kubectl's -f - does.
func Load(path string) ([]*HPA, error) {
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse decodes every HorizontalPodAutoscaler of b, the content of the file source. Empty
// documents, documents of comments only and objects of other kinds are skipped; a `kind: List`
// document's items are read as documents are. The autoscalers without a problem are returned in
// the order of the file; the error, when not nil, is Problems, listing every problem found (an
// autoscaler with one is not returned). An autoscaler needs metadata.name; an empty namespace
// is DefaultNamespace.
func Parse(source string, b []byte) ([]*HPA, error) {
	p := &parser{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		loc := Location{Source: source, Doc: i, Item: -1}
		if err != nil {
			p.add(&Problem{Location: loc, Message: err.Error()})
			break
		}
		p.document(loc, doc)
	}
	if len(p.problems) > 0 {
		return p.out, p.problems
	}
	return p.out, nil
}

type parser struct {
	out      []*HPA
	problems Problems
}

func (p *parser) add(pr *Problem) { p.problems = append(p.problems, pr) }

// objectMeta is what every object says of itself, read leniently so that a problem can name it.
type objectMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// readMeta reads what it can of j's apiVersion, kind, name and namespace, ignoring the rest and
// any value of the wrong type.
func readMeta(j []byte) objectMeta {
	var raw map[string]json.RawMessage
	var m objectMeta
	if json.Unmarshal(j, &raw) != nil {
		return m
	}
	_ = json.Unmarshal(raw["apiVersion"], &m.APIVersion)
	_ = json.Unmarshal(raw["kind"], &m.Kind)
	var md map[string]json.RawMessage
	if json.Unmarshal(raw["metadata"], &md) == nil {
		_ = json.Unmarshal(md["name"], &m.Metadata.Name)
		_ = json.Unmarshal(md["namespace"], &m.Metadata.Namespace)
	}
	return m
}

func (p *parser) document(loc Location, doc []byte) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return
	}
	dups := duplicateKeys(doc)
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		p.add(&Problem{Location: loc, Message: err.Error()})
		return
	}
	if t := bytes.TrimSpace(j); bytes.Equal(t, []byte("null")) {
		return // comments only
	}
	meta := readMeta(j)
	if meta.APIVersion == "v1" && meta.Kind == "List" {
		for _, d := range dups {
			p.add(&Problem{Location: loc, Kind: "List", Field: d.path, Message: d.message()})
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(j, &list); err != nil {
			p.add(&Problem{Location: loc, Kind: "List", Field: "items", Message: err.Error()})
			return
		}
		for i, item := range list.Items {
			itemLoc := loc
			itemLoc.Item = i
			p.object(itemLoc, item, nil)
		}
		return
	}
	p.object(loc, j, dups)
}

// object decodes one object (a document, or a List's item) from its JSON j; dups are the
// duplicate keys YAML parsing found in it.
func (p *parser) object(loc Location, j []byte, dups []duplicate) {
	meta := readMeta(j)
	if meta.Kind != "HorizontalPodAutoscaler" {
		return
	}
	var problems Problems
	report := func(field, msg string) {
		problems = append(problems, &Problem{Location: loc, Kind: meta.Kind, Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name, Field: field, Message: msg})
	}
	for _, d := range dups {
		report(d.path, d.message())
	}
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	var warning string
	switch meta.APIVersion {
	case "autoscaling/v2":
		var v2 autoscalingv2.HorizontalPodAutoscaler
		if decodeStrict(j, &v2, report) {
			hpa = &v2
		}
	case "autoscaling/v1":
		var v1 autoscalingv1.HorizontalPodAutoscaler
		if decodeStrict(j, &v1, report) {
			hpa = fromV1(&v1, report)
		}
	case "autoscaling/v2beta2":
		var b2 autoscalingv2beta2.HorizontalPodAutoscaler
		if decodeStrict(j, &b2, report) {
			hpa = fromV2beta2(&b2)
			warning = removedWarning(meta.APIVersion, v2beta2Removed)
		}
	case "autoscaling/v2beta1":
		var b1 autoscalingv2beta1.HorizontalPodAutoscaler
		if decodeStrict(j, &b1, report) {
			hpa = fromV2beta1(&b1, report)
			warning = removedWarning(meta.APIVersion, v2beta1Removed)
		}
	default:
		report("apiVersion", fmt.Sprintf("%q is not supported: want autoscaling/v2, autoscaling/v2beta2, autoscaling/v2beta1 or autoscaling/v1", meta.APIVersion))
	}
	if hpa != nil && hpa.Name == "" {
		report("metadata.name", "Required value")
	}
	if len(problems) > 0 || hpa == nil {
		p.problems = append(p.problems, problems...)
		return
	}
	written := hpa.Namespace != ""
	if !written {
		hpa.Namespace = DefaultNamespace
	}
	h := &HPA{Location: loc, APIVersion: meta.APIVersion, Object: hpa, NamespaceWritten: written, Spec: pbconv.SpecToProto(&hpa.Spec)}
	if warning != "" {
		h.Warnings = append(h.Warnings, h.Problem("apiVersion", warning))
	}
	p.out = append(p.out, h)
}

// decodeStrict decodes j into v as the API server's strict field validation does
// (case-sensitive), reporting every unknown and duplicate field by its path. A value of the
// wrong type stops the decoding: it is the one problem reported then. It returns whether v is
// usable.
func decodeStrict(j []byte, v any, report func(field, msg string)) bool {
	strict, err := sigsjson.UnmarshalStrict(j, v)
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			report(te.Field, fmt.Sprintf("Invalid value: got a %s, want %s", te.Value, te.Type))
		} else {
			report("", err.Error())
		}
		return false
	}
	for _, e := range strict {
		var fe sigsjson.FieldError
		if !errors.As(e, &fe) {
			report("", e.Error())
			continue
		}
		msg := "unknown field"
		if strings.HasPrefix(e.Error(), "duplicate field") {
			msg = "duplicate field"
		}
		report(fe.FieldPath(), msg)
	}
	return true
}
