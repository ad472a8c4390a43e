package hpactl

import (
	"encoding/json"
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"
)

// convert prints every HorizontalPodAutoscaler of -f (or the one --name picks) as the
// autoscaling/v2 YAML the loader read it as, "---" between documents, as `kubectl convert`
// prints several objects; the loader's warnings go to stderr. It calls no server. The status
// and the empty creationTimestamp of the Go type are left out: a manifest has neither. A
// namespace is printed only when the manifest names one: kubectl applies a manifest without
// one to the namespace of its context or -n, and a "namespace: default" written in would make
// `kubectl apply -n prod` refuse the file (docs/MANIFESTS.md).
func (a *App) convert(args []string) error {
	fs := a.newFlagSet("convert")
	file := fs.String("f", "", "HorizontalPodAutoscaler manifests to convert (autoscaling/v2, v2beta2, v2beta1 or v1; - reads standard input)")
	name := fs.String("name", "", "name of the autoscaler to print (default: each)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("convert needs -f FILE")
	}
	hpas, err := loadHPAs(*file, a.Stderr)
	if err != nil {
		return err
	}
	n := 0
	for _, h := range hpas {
		if *name != "" && h.Name() != *name {
			continue
		}
		j, err := json.Marshal(h.Object)
		if err != nil {
			return err
		}
		var obj map[string]any
		if err := json.Unmarshal(j, &obj); err != nil {
			return err
		}
		delete(obj, "status")
		if md, ok := obj["metadata"].(map[string]any); ok {
			if md["creationTimestamp"] == nil {
				delete(md, "creationTimestamp")
			}
			if !h.NamespaceWritten {
				delete(md, "namespace")
			}
		}
		y, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if n > 0 {
			fmt.Fprintln(a.Stdout, "---")
		}
		n++
		if _, err := a.Stdout.Write(y); err != nil {
			return err
		}
	}
	if n == 0 {
		return fmt.Errorf("manifest %s holds no HorizontalPodAutoscaler named %q", *file, *name)
	}
	return nil
}
