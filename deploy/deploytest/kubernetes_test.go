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

// centralFiles lists the central example's resource files.
func centralFiles(t *testing.T) []string {
	t.Helper()
	_, files := readKustomization(t, filepath.Join(kubeDir, "central"))
	return files
}

func TestCentralManifests(t *testing.T) {
	m := decodeFiles(t, centralFiles(t)...)
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

// checkCentralTargets requires several targets, each a Service address or
// a fleet found by DNS (checkDNSTarget).
func checkCentralTargets(targets []config.Target) []error {
	var errs []error
	if len(targets) < 2 {
		errs = append(errs, fmt.Errorf("central config lists %d targets, want several", len(targets)))
	}
	for _, tg := range targets {
		if tg.Discovery != nil {
			errs = append(errs, checkDNSTarget(tg)...)
			continue
		}
		u, err := url.Parse(tg.URL)
		if err != nil || u.Port() == "" || !strings.Contains(u.Hostname(), ".svc") {
			errs = append(errs, fmt.Errorf("target %s: %q is not a Service address with a port", tg.Name, tg.URL))
		}
	}
	return errs
}

// checkDNSTarget requires a fleet target of the examples to find its
// replicas by DNS (no RBAC needed) under cluster Service names with a port.
func checkDNSTarget(tg config.Target) []error {
	dns := tg.Discovery.DNS
	if dns == nil {
		return []error{fmt.Errorf("target %s: discovery is %s, the examples use dns", tg.Name, tg.Discovery.Mechanism())}
	}
	var errs []error
	if dns.Port == 0 {
		errs = append(errs, fmt.Errorf("target %s: discovery.dns has no port", tg.Name))
	}
	for _, n := range dns.Names {
		if !strings.HasSuffix(n, ".svc.cluster.local") {
			errs = append(errs, fmt.Errorf("target %s: %q is not a cluster Service name", tg.Name, n))
		}
	}
	return errs
}

// TestFleetHeadlessService checks the central example's DNS fleet target
// against the headless Service it names.
func TestFleetHeadlessService(t *testing.T) {
	cfgs, errs := checkManifests(t, decodeFiles(t, centralFiles(t)...), false, nil)
	for _, err := range errs {
		t.Fatal(err)
	}
	checkFleetConfigs(t, cfgs)
}

// checkFleetConfigs requires a DNS fleet target in cfgs whose names are
// headless Services of deploy/kubernetes/vllm-headless (one A record per
// pod) serving the target's port.
func checkFleetConfigs(t *testing.T, cfgs []*config.Config) {
	t.Helper()
	_, files := readKustomization(t, filepath.Join(kubeDir, "vllm-headless"))
	services := decodeFiles(t, files...).services
	var fleets int
	for _, cfg := range cfgs {
		for _, tg := range cfg.Targets {
			if tg.Discovery == nil {
				continue
			}
			fleets++
			for _, err := range checkDNSTarget(tg) {
				t.Error(err)
			}
			if tg.Discovery.DNS == nil {
				continue
			}
			for _, n := range tg.Discovery.DNS.Names {
				if err := checkHeadless(services, n, tg.Discovery.DNS.Port); err != nil {
					t.Errorf("target %s: %v", tg.Name, err)
				}
			}
		}
	}
	if fleets == 0 {
		t.Error("no target with discovery")
	}
}

// checkHeadless requires a headless Service called name (svc.ns.svc.cluster.local)
// serving port among services.
func checkHeadless(services []*corev1.Service, name string, port int) error {
	for _, s := range services {
		if name != s.Name+"."+s.Namespace+".svc.cluster.local" {
			continue
		}
		if s.Spec.ClusterIP != corev1.ClusterIPNone {
			return fmt.Errorf("service %s: clusterIP %q, want None (headless)", s.Name, s.Spec.ClusterIP)
		}
		if len(s.Spec.Selector) == 0 {
			return fmt.Errorf("service %s: no selector, so no pod records", s.Name)
		}
		for _, p := range s.Spec.Ports {
			if int(p.Port) == port && p.TargetPort.IntValue() == port {
				return nil
			}
		}
		return fmt.Errorf("service %s: no port %d to the pods' %d", s.Name, port, port)
	}
	return fmt.Errorf("no headless Service named %s in deploy/kubernetes/vllm-headless", name)
}
