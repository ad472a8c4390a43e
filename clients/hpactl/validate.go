package hpactl

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/hpafile"
	"github.com/hpa-recommender/hpa-recommender/clients/internal/local"
)

// finding is one error or warning of `hpactl validate`.
type finding struct {
	Severity  string `json:"severity"` // "error" or "warning"
	File      string `json:"file"`
	Document  int    `json:"document"`
	Item      int    `json:"item"` // -1 outside a List
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Field     string `json:"field,omitempty"`
	Message   string `json:"message"`
}

func findingOf(severity string, p *hpafile.Problem) finding {
	return finding{Severity: severity, File: p.Source, Document: p.Doc, Item: p.Item, Kind: p.Kind, Namespace: p.Namespace, Name: p.Name, Field: p.Field, Message: p.Message}
}

// validate lists, offline, every problem of every autoscaler of the files: the loader's (an
// unknown, duplicate or mistyped field, a version not read), what the service would refuse
// (local.ValidateSpec, its InvalidArgument's field violations), and warnings for what is valid
// but likely a mistake (lintHPA). Exit 0 without errors (warnings do not fail), 1 with any.
func (a *App) validate(args []string) error {
	fs := a.newFlagSet("validate")
	var files multiFlag
	fs.Var(&files, "f", "HorizontalPodAutoscaler manifests to validate (repeatable; - reads standard input)")
	output := fs.String("output", "text", "text or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("validate needs -f FILE")
	}
	if *output != "text" && *output != "json" {
		return fmt.Errorf("--output %q: want text or json", *output)
	}
	var out []finding
	errs := 0
	for _, f := range files {
		hpas, err := hpafile.Load(f)
		var problems hpafile.Problems
		switch {
		case errors.As(err, &problems):
			for _, p := range problems {
				out = append(out, findingOf("error", p))
				errs++
			}
		case err != nil:
			return fmt.Errorf("read manifest: %w", err)
		}
		for _, h := range hpas {
			for _, v := range local.ValidateSpec(h.Spec) {
				out = append(out, findingOf("error", h.Problem(v.Field, v.Description)))
				errs++
			}
			for _, w := range h.Warnings {
				out = append(out, findingOf("warning", w))
			}
			for _, w := range lintHPA(h) {
				out = append(out, findingOf("warning", w))
			}
		}
	}
	if *output == "json" {
		if out == nil {
			out = []finding{}
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "%s\n", b)
	} else {
		for _, f := range out {
			p := hpafile.Problem{Location: hpafile.Location{Source: f.File, Doc: f.Document, Item: f.Item}, Kind: f.Kind, Namespace: f.Namespace, Name: f.Name, Field: f.Field, Message: f.Message}
			fmt.Fprintf(a.Stdout, "%s: %s\n", f.Severity, p.Error())
		}
	}
	if errs > 0 {
		return errReported
	}
	return nil
}

// multiFlag is a flag given several times.
type multiFlag []string

func (m *multiFlag) String() string { return fmt.Sprint([]string(*m)) }

func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
