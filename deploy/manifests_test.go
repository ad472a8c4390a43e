package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/hpa-recommender/hpa-recommender/clients/scaler"
	"github.com/hpa-recommender/hpa-recommender/server"
)

// The kustomizations the tests render and apply.
var kustomizations = []string{
	"base/namespace",
	"base/recommender",
	"base/scaler",
	"overlays/bolt",
	"overlays/etcd",
}

// kustomization is the part of kustomize's Kustomization these manifests use. An unknown field
// fails the strict decode: add the field here when a kustomization starts using it.
type kustomization struct {
	APIVersion         string         `json:"apiVersion"`
	Kind               string         `json:"kind"`
	Namespace          string         `json:"namespace,omitempty"`
	Resources          []string       `json:"resources,omitempty"`
	ConfigMapGenerator []cmGenerator  `json:"configMapGenerator,omitempty"`
	Patches            []patch        `json:"patches,omitempty"`
	Images             []image        `json:"images,omitempty"`
	Labels             []labelsConfig `json:"labels,omitempty"`
}

type cmGenerator struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace,omitempty"`
	Behavior  string   `json:"behavior,omitempty"`
	Literals  []string `json:"literals,omitempty"`
	Files     []string `json:"files,omitempty"`
	Options   *struct {
		DisableNameSuffixHash bool `json:"disableNameSuffixHash,omitempty"`
	} `json:"options,omitempty"`
}

type patch struct {
	Path string `json:"path"`
}

type image struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

type labelsConfig struct {
	Pairs            map[string]string `json:"pairs"`
	IncludeSelectors bool              `json:"includeSelectors,omitempty"`
}

// newObject returns an empty object of the Go type of apiVersion/kind, or nil for a kind the
// manifests are not expected to hold.
func newObject(apiVersion, kind string) any {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1/Service":
		return &corev1.Service{}
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}
	case "v1/PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "rbac.authorization.k8s.io/v1/ClusterRole":
		return &rbacv1.ClusterRole{}
	case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}
	case "rbac.authorization.k8s.io/v1/Role":
		return &rbacv1.Role{}
	case "rbac.authorization.k8s.io/v1/RoleBinding":
		return &rbacv1.RoleBinding{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "kustomize.config.k8s.io/v1beta1/Kustomization":
		return &kustomization{}
	}
	return nil
}

// strictDecode decodes one YAML document into v as the API server does with field validation
// Strict: unknown fields, duplicate fields and fields in the wrong case are errors.
func strictDecode(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(j, v, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("strict decoding: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// splitDocuments splits a multi-document YAML stream, dropping empty documents.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(stripComments(cur.Bytes()))) > 0 {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
		}
		cur.Reset()
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if t := bytes.TrimRight(line, " \t\r\n"); bytes.Equal(t, []byte("---")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
		}
	}
	return out.Bytes()
}

// object is one decoded manifest document.
type object struct {
	APIVersion, Kind, Name, Namespace string
	Obj                               any    // a pointer to the typed object
	Raw                               []byte // the YAML document
}

// decodeObjects decodes every document of a YAML stream strictly into its Go type.
func decodeObjects(data []byte) ([]object, error) {
	var out []object
	for i, doc := range splitDocuments(data) {
		var tm struct {
			metav1.TypeMeta `json:",inline"`
			Metadata        struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		v := newObject(tm.APIVersion, tm.Kind)
		if v == nil {
			return nil, fmt.Errorf("document %d: unexpected apiVersion %q kind %q (add it to newObject)", i, tm.APIVersion, tm.Kind)
		}
		if err := strictDecode(doc, v); err != nil {
			return nil, fmt.Errorf("document %d (%s %s): %w", i, tm.Kind, tm.Metadata.Name, err)
		}
		out = append(out, object{tm.APIVersion, tm.Kind, tm.Metadata.Name, tm.Metadata.Namespace, v, doc})
	}
	return out, nil
}

// yamlFiles lists every *.yaml and *.yml file under deploy/ (relative paths).
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no YAML files under deploy/")
	}
	return files
}

func readObjects(t *testing.T, path string) []object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}

func readKustomization(t *testing.T, dir string) *kustomization {
	t.Helper()
	objs := readObjects(t, filepath.Join(dir, "kustomization.yaml"))
	if len(objs) != 1 || objs[0].Kind != "Kustomization" {
		t.Fatalf("%s/kustomization.yaml: want one Kustomization", dir)
	}
	return objs[0].Obj.(*kustomization)
}

// TestManifestsDecodeStrictly decodes every YAML file under deploy/ into the Kubernetes API
// types (or kustomize's Kustomization), failing on unknown or duplicate fields, bad quantities
// and unexpected kinds: a typo fails here, before any cluster sees it.
func TestManifestsDecodeStrictly(t *testing.T) {
	for _, f := range yamlFiles(t) {
		objs := readObjects(t, f)
		if len(objs) == 0 {
			t.Errorf("%s: no documents", f)
		}
	}
}

// TestKustomizationReferences checks that every file a kustomization names exists, that every
// directory it names is a kustomization, and that every YAML file under deploy/ is used by one.
func TestKustomizationReferences(t *testing.T) {
	used := map[string]bool{}
	var dirs []string
	for _, f := range yamlFiles(t) {
		if filepath.Base(f) == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(f))
			used[f] = true
		}
	}
	sort.Strings(dirs)
	if !slices.Equal(dirs, slices.Sorted(slices.Values(kustomizations))) {
		t.Errorf("kustomizations on disk %v, the tests know %v: update the list", dirs, kustomizations)
	}
	for _, dir := range dirs {
		k := readKustomization(t, dir)
		if k.APIVersion != "kustomize.config.k8s.io/v1beta1" {
			t.Errorf("%s: apiVersion %q", dir, k.APIVersion)
		}
		check := func(rel string, allowDir bool) {
			p := filepath.Join(dir, rel)
			st, err := os.Stat(p)
			switch {
			case err != nil:
				t.Errorf("%s/kustomization.yaml names %s: %v", dir, rel, err)
			case st.IsDir() && !allowDir:
				t.Errorf("%s/kustomization.yaml: %s is a directory, want a file", dir, rel)
			case st.IsDir():
				if _, err := os.Stat(filepath.Join(p, "kustomization.yaml")); err != nil {
					t.Errorf("%s/kustomization.yaml names directory %s without a kustomization.yaml", dir, rel)
				}
			default:
				used[p] = true
			}
		}
		for _, r := range k.Resources {
			check(r, true)
		}
		for _, p := range k.Patches {
			check(p.Path, false)
		}
		for _, g := range k.ConfigMapGenerator {
			for _, f := range g.Files {
				check(f, false)
			}
		}
	}
	for _, f := range yamlFiles(t) {
		if !used[f] {
			t.Errorf("%s is not used by any kustomization", f)
		}
	}
}

// literalsOf is the merged configMapGenerator literals named name along a chain of
// kustomization directories (base first; a later "merge" overrides keys).
func literalsOf(t *testing.T, name string, dirs ...string) map[string]string {
	t.Helper()
	env := map[string]string{}
	found := false
	for _, dir := range dirs {
		for _, g := range readKustomization(t, dir).ConfigMapGenerator {
			if g.Name != name {
				continue
			}
			if found && g.Behavior != "merge" {
				t.Errorf("%s: generator %s overrides the base without behavior: merge", dir, name)
			}
			found = true
			for _, l := range g.Literals {
				k, v, ok := strings.Cut(l, "=")
				if !ok {
					t.Fatalf("%s: literal %q has no =", dir, l)
				}
				env[k] = v
			}
		}
	}
	if !found {
		t.Fatalf("no configMapGenerator %s in %v", name, dirs)
	}
	return env
}

// checkEnv sets every variable of env through the binary's own flag set and environment
// handling, then validates the configuration: an unknown variable (silently ignored by the
// binary) or a bad value fails here.
func checkEnv(t *testing.T, what string, env map[string]string, prefix string, envName func(string) string,
	register func(*flag.FlagSet), apply func(*flag.FlagSet, func(string) (string, bool)) error, validate func() error) {
	t.Helper()
	fs := flag.NewFlagSet(what, flag.ContinueOnError)
	register(fs)
	known := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { known[envName(f.Name)] = true })
	for k := range env {
		if !strings.HasPrefix(k, prefix) || !known[k] {
			t.Errorf("%s: %s is not the environment variable of any flag", what, k)
		}
	}
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := apply(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Errorf("%s: %v", what, err)
	}
	if err := validate(); err != nil {
		t.Errorf("%s: the configuration does not validate: %v", what, err)
	}
}

// TestRecommenderConfig runs each overlay's environment through hpa-recommender's flags.
func TestRecommenderConfig(t *testing.T) {
	for _, tc := range []struct {
		dirs  []string
		store string
	}{
		{[]string{"base/recommender"}, server.StoreMemory},
		{[]string{"base/recommender", "overlays/bolt"}, server.StoreBolt},
		{[]string{"base/recommender", "overlays/etcd"}, server.StoreEtcd},
	} {
		name := tc.dirs[len(tc.dirs)-1]
		env := literalsOf(t, "hpa-recommender-config", tc.dirs...)
		cfg := server.DefaultConfig()
		checkEnv(t, name, env, server.EnvPrefix, server.EnvName, cfg.RegisterFlags, server.ApplyEnv, cfg.Validate)
		if cfg.Store != tc.store {
			t.Errorf("%s: store %q, want %q", name, cfg.Store, tc.store)
		}
		if !strings.HasPrefix(cfg.Listen, ":") || !strings.HasSuffix(cfg.Listen, ":50051") {
			t.Errorf("%s: --listen %q, want every interface, port 50051", name, cfg.Listen)
		}
		if cfg.MetricsListen != ":9090" {
			t.Errorf("%s: --metrics-listen %q, want :9090", name, cfg.MetricsListen)
		}
		if tc.store == server.StoreBolt && cfg.BoltPath != "/data/hpa-recommender.db" {
			t.Errorf("%s: --bolt-path %q, want it on the /data volume", name, cfg.BoltPath)
		}
	}
}

// TestScalerConfig runs the scaler's environment through hpa-scaler's flags and loads the
// example manifests with the scaler's own loader.
func TestScalerConfig(t *testing.T) {
	env := literalsOf(t, "hpa-scaler-config", "base/scaler")
	cfg := scaler.DefaultConfig()
	checkEnv(t, "base/scaler", env, scaler.EnvPrefix, scaler.EnvName, cfg.RegisterFlags, scaler.ApplyEnv, cfg.Validate)
	if cfg.ManifestsDir != "/etc/hpa-scaler/manifests" {
		t.Errorf("--manifests-dir %q, want the ConfigMap mount", cfg.ManifestsDir)
	}
	if !cfg.LeaderElect || cfg.LeaderElectionName != "hpa-scaler" {
		t.Errorf("leader election %v %q: the Role grants the Lease hpa-scaler only", cfg.LeaderElect, cfg.LeaderElectionName)
	}
	if cfg.HTTPListen != ":8080" {
		t.Errorf("--http-listen %q, want :8080 (the probes' port)", cfg.HTTPListen)
	}
	as, err := scaler.LoadManifests("base/scaler/hpa-manifests")
	if err != nil {
		t.Fatalf("the scaler rejects the example manifests: %v", err)
	}
	if len(as) == 0 {
		t.Fatal("no autoscaler in base/scaler/hpa-manifests")
	}
}

// expectedScalerClusterRules is hpa-scaler's least privilege across the cluster.
var expectedScalerClusterRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale", "statefulsets/scale", "replicasets/scale"}, Verbs: []string{"get", "update"}},
	{APIGroups: []string{""}, Resources: []string{"replicationcontrollers/scale"}, Verbs: []string{"get", "update"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{"custom.metrics.k8s.io", "external.metrics.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
}

// expectedScalerLeaseRules is hpa-scaler's least privilege in its own namespace.
var expectedScalerLeaseRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"hpa-scaler"}, Verbs: []string{"get", "update"}},
}

// checkObjects checks the properties every rendering of these manifests must keep: restricted
// pod security, probes, resources, least-privilege RBAC. It is run on the source files (go
// test) and on each kubectl kustomize output (e2e).
func checkObjects(t *testing.T, where string, objs []object) {
	t.Helper()
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			checkPodSpec(t, where+": Deployment "+o.Name, o.Name, &v.Spec.Template.Spec)
		case *rbacv1.ClusterRole:
			if o.Name == "hpa-scaler" && !reflect.DeepEqual(v.Rules, expectedScalerClusterRules) {
				t.Errorf("%s: ClusterRole hpa-scaler rules\n%s\nwant exactly\n%s", where, rulesString(v.Rules), rulesString(expectedScalerClusterRules))
			}
		case *rbacv1.Role:
			if o.Name == "hpa-scaler-leader-election" && !reflect.DeepEqual(v.Rules, expectedScalerLeaseRules) {
				t.Errorf("%s: Role %s rules\n%s\nwant exactly\n%s", where, o.Name, rulesString(v.Rules), rulesString(expectedScalerLeaseRules))
			}
		}
	}
}

func rulesString(rules []rbacv1.PolicyRule) string {
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "  groups=%q resources=%q names=%q verbs=%q\n", r.APIGroups, r.Resources, r.ResourceNames, r.Verbs)
	}
	return b.String()
}

func checkPodSpec(t *testing.T, where, name string, spec *corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v, want runAsNonRoot, runAsUser 65532, seccompProfile RuntimeDefault", where, psc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", where, len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("%s: container securityContext %+v, want readOnlyRootFilesystem, no privilege escalation, drop ALL", where, sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := c.Resources.Requests[r]; !ok || q.Cmp(resource.Quantity{}) <= 0 {
			t.Errorf("%s: no %s request", where, r)
		}
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("%s: no memory limit", where)
	}
	if c.Image != name+":dev" {
		t.Errorf("%s: image %q, want %s:dev (override with kustomize images)", where, c.Image, name)
	}
	lp, rp := c.LivenessProbe, c.ReadinessProbe
	if lp == nil || rp == nil {
		t.Fatalf("%s: liveness %v, readiness %v: want both", where, lp, rp)
	}
	switch name {
	case "hpa-recommender":
		for _, p := range []*corev1.Probe{lp, rp} {
			if p.GRPC == nil || p.GRPC.Port != 50051 {
				t.Errorf("%s: probe %+v, want a native gRPC probe on port 50051", where, p.ProbeHandler)
			}
		}
		if rp.GRPC != nil && (rp.GRPC.Service == nil || *rp.GRPC.Service != "recommender.v1.RecommenderService") {
			t.Errorf("%s: readiness gRPC service %v, want recommender.v1.RecommenderService", where, rp.GRPC.Service)
		}
	case "hpa-scaler":
		for p, path := range map[*corev1.Probe]string{lp: "/healthz", rp: "/readyz"} {
			if p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
				t.Errorf("%s: probe %+v, want httpGet %s on port http", where, p.ProbeHandler, path)
			}
		}
		if c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
			t.Errorf("%s: port %+v, want http 8080", where, c.Ports[0])
		}
	default:
		t.Errorf("%s: unexpected Deployment", where)
	}
}

// TestBaseProperties checks the base manifests as written.
func TestBaseProperties(t *testing.T) {
	for _, f := range []string{"base/recommender/deployment.yaml", "base/scaler/deployment.yaml", "base/scaler/rbac.yaml"} {
		checkObjects(t, f, readObjects(t, f))
	}
}
