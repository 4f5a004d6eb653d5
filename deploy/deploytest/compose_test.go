package deploytest

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var composeDir = filepath.Join(repoRoot, "deploy", "compose")

// composeFile is the part of the Compose specification the stack uses,
// decoded strictly so a misspelt key fails.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]struct{}       `yaml:"volumes"`
}

type composeService struct {
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Image       string            `yaml:"image"`
	User        string            `yaml:"user"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   yaml.Node         `yaml:"depends_on"`
	Restart     string            `yaml:"restart"`
}

func decodeStrict(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// mounts maps the container paths of a service's volumes to their
// sources: a path relative to the compose directory, or a volume name.
func mounts(s composeService) map[string]string {
	out := map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			out[parts[1]] = parts[0]
		}
	}
	return out
}

// hostMount returns the host file behind a container path of s.
func hostMount(t *testing.T, s composeService, containerPath string) string {
	t.Helper()
	src, ok := mounts(s)[containerPath]
	if !ok || !strings.HasPrefix(src, ".") {
		t.Fatalf("%s is not bind-mounted from the repository", containerPath)
	}
	return filepath.Join(composeDir, src)
}

func TestComposeStack(t *testing.T) {
	var c composeFile
	decodeStrict(t, filepath.Join(composeDir, "compose.yml"), &c)
	for _, name := range []string{"vllm", "vllm-prober", "rules", "prometheus", "alertmanager", "grafana"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("service %s missing", name)
		}
	}
	for name, s := range c.Services {
		t.Run("service "+name, func(t *testing.T) { checkComposeService(t, c, s) })
	}
	t.Run("prober config", func(t *testing.T) { checkComposeProber(t, c) })
	t.Run("prometheus", func(t *testing.T) { checkComposePrometheus(t, c) })
	t.Run("grafana", func(t *testing.T) { checkComposeGrafana(t, c) })
}

// checkComposeService requires build contexts with the Dockerfile, bind
// mount sources that exist and named volumes that are declared.
func checkComposeService(t *testing.T, c composeFile, s composeService) {
	if s.Build != nil {
		df := filepath.Join(composeDir, s.Build.Context, s.Build.Dockerfile)
		if _, err := os.Stat(df); err != nil {
			t.Errorf("build: %v", err)
		}
	}
	if s.Image == "" {
		t.Error("no image")
	}
	for target, src := range mounts(s) {
		if strings.HasPrefix(src, ".") {
			if _, err := os.Stat(filepath.Join(composeDir, src)); err != nil {
				t.Errorf("volume %s: %v", target, err)
			}
			continue
		}
		if _, ok := c.Volumes[src]; !ok {
			t.Errorf("volume %s: named volume %q not declared", target, src)
		}
	}
	for _, p := range s.Ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("port %s is published beyond the loopback interface", p)
		}
	}
}

// checkComposeProber loads the prober config and requires its targets to
// be the vllm service on the port the simulator listens on, and the rules
// service to read the same config.
func checkComposeProber(t *testing.T, c composeFile) {
	prober, rulesSvc := c.Services["vllm-prober"], c.Services["rules"]
	file, ok := argValue(prober.Command, "--config.file")
	if !ok || prober.Command[0] != "run" {
		t.Fatalf("vllm-prober command %q does not run the daemon with --config.file", prober.Command)
	}
	data, err := os.ReadFile(hostMount(t, prober, file))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(t.TempDir(), data)
	if err != nil {
		t.Fatal(err)
	}
	listen, _ := argValue(c.Services["vllm"].Command, "--web.listen-address")
	_, port, _ := net.SplitHostPort(listen)
	for _, tg := range cfg.Targets {
		u, err := url.Parse(tg.URL)
		if err != nil || u.Hostname() != "vllm" || u.Port() != port {
			t.Errorf("target %s: %s is not the vllm service on port %s", tg.Name, tg.URL, port)
		}
	}
	if rf, _ := argValue(rulesSvc.Command, "--config.file"); hostMount(t, rulesSvc, rf) != hostMount(t, prober, file) {
		t.Errorf("the rules service reads %s, not the prober's config", rf)
	}
}

// composePrometheus is the part of prometheus.yml the checks read.
type composePrometheus struct {
	RuleFiles []string `yaml:"rule_files"`
	Alerting  struct {
		Alertmanagers []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"alertmanagers"`
	} `yaml:"alerting"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

// checkComposePrometheus requires the generated rules to land where
// Prometheus reads them, the prober to be scraped as job vllm-prober (the
// rules select it) and every scrape target to be a service of the stack.
func checkComposePrometheus(t *testing.T, c composeFile) {
	prom, rulesSvc := c.Services["prometheus"], c.Services["rules"]
	var p composePrometheus
	data, err := os.ReadFile(hostMount(t, prom, "/etc/prometheus/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	out, _ := argValue(rulesSvc.Command, "--output")
	rulesVolume := mounts(rulesSvc)[path.Dir(out)]
	readable := false
	for _, glob := range p.RuleFiles {
		if m, _ := path.Match(glob, path.Join(dirMountedFrom(prom, rulesVolume), path.Base(out))); m {
			readable = true
		}
	}
	if !readable {
		t.Errorf("rule_files %q do not match the rules service's output %s", p.RuleFiles, out)
	}
	jobs := map[string][]string{}
	for _, sc := range p.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			jobs[sc.JobName] = append(jobs[sc.JobName], s.Targets...)
		}
	}
	if !slices.Equal(jobs["vllm-prober"], []string{"vllm-prober:9478"}) {
		t.Errorf("job vllm-prober scrapes %q, want vllm-prober:9478", jobs["vllm-prober"])
	}
	for job, targets := range jobs {
		for _, target := range targets {
			host, _, _ := net.SplitHostPort(target)
			if _, ok := c.Services[host]; !ok && host != "localhost" {
				t.Errorf("job %s: target %s is not a service of the stack", job, target)
			}
		}
	}
	if len(p.Alerting.Alertmanagers) != 1 || !slices.Equal(p.Alerting.Alertmanagers[0].StaticConfigs[0].Targets, []string{"alertmanager:9093"}) {
		t.Errorf("alerting does not send to alertmanager:9093")
	}
}

// dirMountedFrom is the container directory where s mounts volume.
func dirMountedFrom(s composeService, volume string) string {
	for target, src := range mounts(s) {
		if src == volume {
			return target
		}
	}
	return ""
}

// checkComposeGrafana requires the dashboards provider to read the
// directory the repository's dashboards are mounted at, and the data
// source to be the stack's Prometheus.
func checkComposeGrafana(t *testing.T, c composeFile) {
	g := c.Services["grafana"]
	prov := hostMount(t, g, "/etc/grafana/provisioning")
	var providers struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	decodeYAMLFile(t, filepath.Join(prov, "dashboards", "vllm-prober.yml"), &providers)
	if len(providers.Providers) != 1 {
		t.Fatalf("want one dashboards provider, got %d", len(providers.Providers))
	}
	src := mounts(g)[providers.Providers[0].Options.Path]
	if filepath.Clean(filepath.Join(composeDir, src)) != filepath.Clean(filepath.Join(repoRoot, "dashboards")) {
		t.Errorf("the dashboards provider reads %s, mounted from %q, not the repository's dashboards/", providers.Providers[0].Options.Path, src)
	}
	var ds struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	decodeYAMLFile(t, filepath.Join(prov, "datasources", "prometheus.yml"), &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].URL != "http://prometheus:9090" || ds.Datasources[0].Type != "prometheus" {
		t.Errorf("data sources %+v, want the stack's Prometheus", ds.Datasources)
	}
	checkDashboardSources(t, ds.Datasources[0].UID)
}

// checkDashboardSources requires every provisioned dashboard to find the
// provisioned data source: through a datasource variable of type
// prometheus, or by its uid.
func checkDashboardSources(t *testing.T, uid string) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in dashboards/: %v", err)
	}
	for _, f := range files {
		var d struct {
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ok := bytes.Contains(data, []byte(`"uid": "`+uid+`"`))
		for _, v := range d.Templating.List {
			ok = ok || (v.Type == "datasource" && v.Query == "prometheus")
		}
		if !ok {
			t.Errorf("%s uses neither a prometheus datasource variable nor the data source uid %q", f, uid)
		}
	}
}

func decodeYAMLFile(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestComposeGPUOverride checks the one-line switch to vLLM on a GPU: the
// override drops the simulator's build, runs the vLLM image on the port the
// prober targets and reserves an NVIDIA GPU.
func TestComposeGPUOverride(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(composeDir, "compose.gpu.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	vllm := mapValue(mapValue(doc.Content[0], "services"), "vllm")
	if vllm == nil {
		t.Fatal("compose.gpu.yml does not override the vllm service")
	}
	if b := mapValue(vllm, "build"); b == nil || b.Tag != "!reset" {
		t.Error("build is not reset, compose would build this repository under the vLLM image name")
	}
	if img := mapValue(vllm, "image"); img == nil || !strings.HasPrefix(img.Value, "vllm/vllm-openai:") {
		t.Error("image is not vllm/vllm-openai")
	}
	var svc struct {
		Command []string `yaml:"command"`
		Deploy  struct {
			Resources struct {
				Reservations struct {
					Devices []struct {
						Driver       string   `yaml:"driver"`
						Capabilities []string `yaml:"capabilities"`
					} `yaml:"devices"`
				} `yaml:"reservations"`
			} `yaml:"resources"`
		} `yaml:"deploy"`
	}
	if err := vllm.Decode(&svc); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(svc.Command, "--port=8000") {
		t.Errorf("command %q does not serve on port 8000, where the prober looks", svc.Command)
	}
	devs := svc.Deploy.Resources.Reservations.Devices
	if len(devs) != 1 || devs[0].Driver != "nvidia" || !slices.Contains(devs[0].Capabilities, "gpu") {
		t.Errorf("no NVIDIA GPU reservation: %+v", devs)
	}
}

// mapValue returns the value of key in a YAML mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
