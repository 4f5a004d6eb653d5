//go:build e2e

package deploytest

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestKustomizeBuild decodes what `kustomize build` produces for each
// directory, the objects that `kubectl apply -k` would send, and runs the
// same wiring checks on them.
func TestKustomizeBuild(t *testing.T) {
	for _, mode := range []string{"sidecar", "central"} {
		t.Run(mode, func(t *testing.T) {
			m := kustomizeBuild(t, filepath.Join(kubeDir, mode))
			_, errs := checkManifests(t, m, mode == "sidecar", nil)
			for _, err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestKustomizeBenchJob checks what `kustomize build` makes of the sharded
// bench, wired as checkBenchJob wants.
func TestKustomizeBenchJob(t *testing.T) {
	for _, err := range checkBenchJob(kustomizeBuild(t, filepath.Join(kubeDir, "bench-job"))) {
		t.Error(err)
	}
}

// kustomizeBuild decodes what `kustomize build dir` produces and checks
// it holds one object per file of dir.
func kustomizeBuild(t *testing.T, dir string) *manifests {
	t.Helper()
	var stderr bytes.Buffer
	cmd := goTool("kustomize", "build", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build: %v\n%s", err, stderr.String())
	}
	m := newManifests()
	if err := decodeStream(m, out); err != nil {
		t.Fatal(err)
	}
	if m.count() != len(yamlFiles(t, dir)) {
		t.Errorf("kustomize built %d objects from %d files", m.count(), len(yamlFiles(t, dir)))
	}
	return m
}

// TestKustomizeHeadlessService checks that `kustomize build` keeps the
// headless Service of a fleet in its own namespace, the one its DNS name
// in the central example holds.
func TestKustomizeHeadlessService(t *testing.T) {
	m := kustomizeBuild(t, filepath.Join(kubeDir, "vllm-headless"))
	for _, s := range m.services {
		if s.Namespace != "vllm" || s.Spec.ClusterIP != "None" {
			t.Errorf("service %s: namespace %q clusterIP %q, want vllm and None", s.Name, s.Namespace, s.Spec.ClusterIP)
		}
	}
	if len(m.services) != 1 {
		t.Errorf("%d services, want 1", len(m.services))
	}
}
