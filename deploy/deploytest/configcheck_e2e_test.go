//go:build e2e

package deploytest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// TestConfigCheckCommand runs `vllm-prober run --config.check`, the
// command users run, on every shipped config: the image default, the
// compose config, the ConfigMaps of the Kubernetes manifests and the
// ConfigMaps the chart renders for each test case.
func TestConfigCheckCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "vllm-prober")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	configs := map[string]string{
		"docker default": filepath.Join(repoRoot, "deploy", "docker", "vllm-prober.yml"),
		"compose":        filepath.Join(composeDir, "vllm-prober.yml"),
	}
	for _, mode := range []string{"sidecar", "central"} {
		m := decodeFiles(t, filepath.Join(kubeDir, mode, "configmap.yaml"))
		addConfigMaps(t, configs, dir, "kubernetes "+mode, m)
	}
	for _, c := range helmCases {
		m := newManifests()
		if err := decodeStream(m, helm(t, append([]string{"template", "release", chartDir}, c.helmArgs(true)...)...)); err != nil {
			t.Fatal(err)
		}
		addConfigMaps(t, configs, dir, "helm "+c.name, m)
	}
	for name, file := range configs {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(bin, "run", "--config.check", "--config.file="+file).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "SUCCESS") {
				t.Errorf("--config.check: %v\n%s", err, out)
			}
		})
	}
}

// addConfigMaps writes the prober config of every ConfigMap in m to dir
// and records it under a name starting with prefix.
func addConfigMaps(t *testing.T, configs map[string]string, dir, prefix string, m *manifests) {
	t.Helper()
	if len(m.configMaps) == 0 {
		t.Fatalf("%s: no ConfigMap", prefix)
	}
	for name, cm := range m.configMaps {
		data, ok := cm.Data["vllm-prober.yml"]
		if !ok {
			t.Fatalf("%s: ConfigMap %s has no vllm-prober.yml", prefix, name)
		}
		file := testfile.Write(t, dir, strings.ReplaceAll(prefix+"-"+name, " ", "-")+".yml", data)
		configs[prefix+" "+name] = file
	}
}
