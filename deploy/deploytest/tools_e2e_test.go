//go:build e2e

package deploytest

import (
	"os/exec"
	"path/filepath"
)

// goTool returns the command that runs one of the Go tools pinned in
// tools/go.mod (helm, kustomize) at its pinned version, so nothing has to
// be installed on PATH.
func goTool(name string, args ...string) *exec.Cmd {
	modfile, err := filepath.Abs(filepath.Join(repoRoot, "tools", "go.mod"))
	if err != nil {
		modfile = filepath.Join(repoRoot, "tools", "go.mod")
	}
	return exec.Command("go", append([]string{"tool", "-modfile=" + modfile, name}, args...)...)
}
