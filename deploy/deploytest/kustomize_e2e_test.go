//go:build e2e

package deploytest

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestKustomizeBuild decodes what `kustomize build` produces for each
// directory, the objects that `kubectl apply -k` would send, and runs the
// same wiring checks on them.
func TestKustomizeBuild(t *testing.T) {
	bin, err := exec.LookPath("kustomize")
	if err != nil {
		t.Fatalf("kustomize is required (go install sigs.k8s.io/kustomize/kustomize/v5@v5.8.2): %v", err)
	}
	for _, mode := range []string{"sidecar", "central"} {
		t.Run(mode, func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := exec.Command(bin, "build", filepath.Join(kubeDir, mode))
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("kustomize build: %v\n%s", err, stderr.String())
			}
			m := newManifests()
			if err := decodeStream(m, out); err != nil {
				t.Fatal(err)
			}
			if m.count() != len(yamlFiles(t, filepath.Join(kubeDir, mode))) {
				t.Errorf("kustomize built %d objects from %d files", m.count(), len(yamlFiles(t, filepath.Join(kubeDir, mode))))
			}
			_, errs := checkManifests(t, m, mode == "sidecar", nil)
			for _, err := range errs {
				t.Error(err)
			}
		})
	}
}
