package deploytest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository root seen from this package's directory.
const repoRoot = "../.."

// kinds maps apiVersion/kind to a constructor of the official Go type the
// manifest must decode into. A kind missing here is an error: the tests
// must be taught every object the deployment ships.
var kinds = map[string]func() any{
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"batch/v1/Job":                            func() any { return &batchv1.Job{} },
	"v1/PersistentVolumeClaim":                func() any { return &corev1.PersistentVolumeClaim{} },
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"monitoring.coreos.com/v1/PodMonitor":     func() any { return &monv1.PodMonitor{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monv1.PrometheusRule{} },
}

// manifests is a decoded set of objects that are applied together.
type manifests struct {
	deployments     []*appsv1.Deployment
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	services        []*corev1.Service
	serviceAccounts []*corev1.ServiceAccount
	podMonitors     []*monv1.PodMonitor
	serviceMonitors []*monv1.ServiceMonitor
	rules           []*monv1.PrometheusRule
	jobs            []*batchv1.Job
	claims          map[string]*corev1.PersistentVolumeClaim
}

func newManifests() *manifests {
	return &manifests{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		claims: map[string]*corev1.PersistentVolumeClaim{}}
}

func (m *manifests) count() int {
	return len(m.deployments) + len(m.configMaps) + len(m.secrets) + len(m.services) +
		len(m.serviceAccounts) + len(m.podMonitors) + len(m.serviceMonitors) + len(m.rules) + len(m.jobs) + len(m.claims)
}

func (m *manifests) add(obj any) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		m.deployments = append(m.deployments, o)
	case *corev1.ConfigMap:
		m.configMaps[o.Name] = o
	case *corev1.Secret:
		m.secrets[o.Name] = o
	case *corev1.Service:
		m.services = append(m.services, o)
	case *corev1.ServiceAccount:
		m.serviceAccounts = append(m.serviceAccounts, o)
	case *monv1.PodMonitor:
		m.podMonitors = append(m.podMonitors, o)
	case *monv1.ServiceMonitor:
		m.serviceMonitors = append(m.serviceMonitors, o)
	case *monv1.PrometheusRule:
		m.rules = append(m.rules, o)
	case *batchv1.Job:
		m.jobs = append(m.jobs, o)
	case *corev1.PersistentVolumeClaim:
		m.claims[o.Name] = o
	}
}

var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// splitDocuments splits a multi-document YAML stream, dropping documents
// that hold only comments or whitespace (helm emits those).
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	for _, doc := range documentSeparator.Split(string(data), -1) {
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err == nil && v == nil {
			continue
		}
		docs = append(docs, []byte(doc))
	}
	return docs
}

// decodeObject strictly decodes one manifest into its official type:
// unknown or duplicate fields are errors.
func decodeObject(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, fmt.Errorf("read apiVersion and kind: %w", err)
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("unexpected object %s %s", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("strict decode %s: %w", tm.Kind, err)
	}
	return obj, nil
}

// decodeStream decodes every document of a YAML stream into m.
func decodeStream(m *manifests, data []byte) error {
	for i, doc := range splitDocuments(data) {
		obj, err := decodeObject(doc)
		if err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
		m.add(obj)
	}
	return nil
}

// decodeFiles reads and decodes the named files into one set.
func decodeFiles(t *testing.T, files ...string) *manifests {
	t.Helper()
	m := newManifests()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeStream(m, data); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return m
}

func TestDecodeObjectRejects(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
	}{
		{"unknown field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndatta: {}\n"},
		{"unknown nested field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec: {replica: 1}\n"},
		{"duplicate field", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nmetadata: {name: b}\n"},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n"},
		{"unknown monitor field", "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: a}\nspec: {endpoints: []}\n"},
		{"wrong value type", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec: {replicas: one}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if obj, err := decodeObject([]byte(tc.doc)); err == nil {
				t.Fatalf("decoded %T without error", obj)
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	in := "---\n# Source: a.yaml\n---\nkind: A\n---\n\n---\nkind: B\n"
	docs := splitDocuments([]byte(in))
	if len(docs) != 2 || !bytes.Contains(docs[0], []byte("kind: A")) || !bytes.Contains(docs[1], []byte("kind: B")) {
		t.Fatalf("got %q", docs)
	}
}

// yamlFiles lists the *.yaml files of dir except kustomization.yaml.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			out = append(out, f)
		}
	}
	return out
}
