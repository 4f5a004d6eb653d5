package deploytest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/vllm-prober/vllm-prober/config"
)

var kubeDir = filepath.Join(repoRoot, "deploy", "kubernetes")

// kustomization is the part of kustomize's Kustomization the manifests use,
// decoded strictly so a misspelt field fails (kustomize's own types module
// is not worth its dependencies here).
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
		IncludeTemplates bool              `json:"includeTemplates,omitempty"`
	} `json:"labels,omitempty"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images,omitempty"`
}

// readKustomization decodes dir/kustomization.yaml and returns the paths
// of its resources, which must be exactly the other YAML files of dir.
func readKustomization(t *testing.T, dir string) (kustomization, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("%s/kustomization.yaml: apiVersion/kind %s/%s", dir, k.APIVersion, k.Kind)
	}
	var files []string
	for _, r := range k.Resources {
		files = append(files, filepath.Join(dir, r))
	}
	present := yamlFiles(t, dir)
	slices.Sort(files)
	if !slices.Equal(files, present) {
		t.Errorf("%s: kustomization resources %q, files %q", dir, files, present)
	}
	return k, files
}

func TestKustomizations(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(kubeDir, "*", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 2 {
		t.Fatalf("want kustomizations for sidecar and central, got %q", dirs)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			k, files := readKustomization(t, dir)
			m := decodeFiles(t, files...)
			if m.count() == 0 {
				t.Fatal("no objects")
			}
			for _, img := range k.Images {
				if !usesImage(m, img.Name) {
					t.Errorf("images: %s is used by no container", img.Name)
				}
			}
		})
	}
}

func usesImage(m *manifests, name string) bool {
	var pods []corev1.PodSpec
	for _, d := range m.deployments {
		pods = append(pods, d.Spec.Template.Spec)
	}
	for _, j := range m.jobs {
		pods = append(pods, j.Spec.Template.Spec)
	}
	for _, p := range pods {
		for _, c := range p.Containers {
			if c.Image == name || strings.HasPrefix(c.Image, name+":") || strings.HasPrefix(c.Image, name+"@") {
				return true
			}
		}
	}
	return false
}

// checkManifests runs every wiring check on a set of objects (the sidecar
// checks when sidecar is set; external names Secrets created outside the
// manifests) and returns the prober configs it loaded.
func checkManifests(t *testing.T, m *manifests, sidecar bool, external map[string]bool) ([]*config.Config, []error) {
	t.Helper()
	if len(m.deployments) == 0 {
		return nil, []error{errors.New("no deployment")}
	}
	errs := append(checkServices(m), checkMonitors(m)...)
	var cfgs []*config.Config
	for _, d := range m.deployments {
		errs = append(errs, checkPodSpec(m, d, external)...)
		cfg, cerrs := checkProber(m, d, t.TempDir())
		errs = append(errs, cerrs...)
		if cfg == nil {
			continue
		}
		cfgs = append(cfgs, cfg)
		if sidecar {
			errs = append(errs, checkSidecar(d, cfg)...)
		}
	}
	return cfgs, errs
}

func TestSidecarManifests(t *testing.T) {
	_, files := readKustomization(t, filepath.Join(kubeDir, "sidecar"))
	m := decodeFiles(t, files...)
	if len(m.deployments) != 1 || len(m.podMonitors) != 1 {
		t.Fatalf("want one Deployment and one PodMonitor, got %d and %d", len(m.deployments), len(m.podMonitors))
	}
	_, errs := checkManifests(t, m, true, nil)
	for _, err := range errs {
		t.Error(err)
	}
}

func TestCentralManifests(t *testing.T) {
	_, files := readKustomization(t, filepath.Join(kubeDir, "central"))
	m := decodeFiles(t, files...)
	if len(m.deployments) != 1 || len(m.serviceMonitors) != 1 || len(m.services) != 1 {
		t.Fatalf("want one Deployment, Service and ServiceMonitor, got %d, %d and %d",
			len(m.deployments), len(m.services), len(m.serviceMonitors))
	}
	if r := m.deployments[0].Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("central prober must run one replica per config, got %v", r)
	}
	cfgs, errs := checkManifests(t, m, false, nil)
	for _, cfg := range cfgs {
		errs = append(errs, checkCentralTargets(cfg.Targets)...)
	}
	for _, err := range errs {
		t.Error(err)
	}
}

// checkCentralTargets requires several targets, each a Service address.
func checkCentralTargets(targets []config.Target) []error {
	var errs []error
	if len(targets) < 2 {
		errs = append(errs, fmt.Errorf("central config lists %d targets, want several", len(targets)))
	}
	for _, tg := range targets {
		u, err := url.Parse(tg.URL)
		if err != nil || u.Port() == "" || !strings.Contains(u.Hostname(), ".svc") {
			errs = append(errs, fmt.Errorf("target %s: %q is not a Service address with a port", tg.Name, tg.URL))
		}
	}
	return errs
}
