package deploytest

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ignored reports whether a .dockerignore excludes name (a slash path from
// the context root). It follows the patterns the file uses: a leading
// slash, "**/" prefixes, globs, directory prefixes and "!" exceptions.
func ignored(dockerignore, name string) bool {
	out := false
	for _, line := range strings.Split(dockerignore, "\n") {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		negate := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/")
		if matchIgnore(p, name) {
			out = !negate
		}
	}
	return out
}

func matchIgnore(pattern, name string) bool {
	parts := strings.Split(name, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		if ok, _ := path.Match(pattern, prefix); ok {
			return true
		}
		if rest, ok := strings.CutPrefix(pattern, "**/"); ok {
			if m, _ := path.Match(rest, parts[i]); m {
				return true
			}
		}
	}
	return false
}

func TestDockerignore(t *testing.T) {
	di := readRepoFile(t, ".dockerignore")
	for _, tc := range []struct {
		name    string
		ignored bool
	}{
		{"go.mod", false},
		{"go.sum", false},
		{"main.go", false},
		{"deploy/build.sh", false},
		{"config/config.go", false},
		{"probe/result.go", false},
		{".git", true},
		{"docs/deploy.md", true},
		{"config/load_test.go", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ignored(di, tc.name); got != tc.ignored {
				t.Errorf("ignored(%s) = %v, want %v", tc.name, got, tc.ignored)
			}
		})
	}
}

// TestDockerignoreKeepsEmbeds requires every file a //go:embed directive
// of the build names to reach the build context.
func TestDockerignoreKeepsEmbeds(t *testing.T) {
	di := readRepoFile(t, ".dockerignore")
	embeds := 0
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range embedDirective.FindAllStringSubmatch(string(data), -1) {
			for _, pattern := range strings.Fields(m[1]) {
				files, _ := filepath.Glob(filepath.Join(filepath.Dir(p), pattern))
				for _, f := range files {
					rel, _ := filepath.Rel(repoRoot, f)
					embeds++
					if ignored(di, filepath.ToSlash(rel)) {
						t.Errorf(".dockerignore excludes %s, embedded by %s", rel, p)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if embeds == 0 {
		t.Fatal("found no embedded files; the walk is broken")
	}
}

var embedDirective = regexp.MustCompile(`(?m)^//go:embed (.+)$`)

// TestBuildScript checks the flags of the one build command.
func TestBuildScript(t *testing.T) {
	for _, err := range checkBuildScript(readRepoFile(t, buildScript)) {
		t.Error(err)
	}
}

// TestBuildScriptChecksFail breaks the build script one way at a time and
// requires its check to notice.
func TestBuildScriptChecksFail(t *testing.T) {
	requireChecksFail(t, buildScript, checkBuildScript, []breakCase{
		{"cgo", "CGO_ENABLED=0 ", "", "CGO_ENABLED=0"},
		{"trimpath", "go build -trimpath", "go build", "-trimpath"},
		{"version ldflag", "version.Revision=", "version.Rev=", "version.Revision"},
		{"no go build", "go build", "go vet", "0 go build"},
	})
}

// TestBuildCallers requires `make build` and deploy/check.sh to run the
// build script rather than a go build of their own, so CI exercises the
// image's build command (the Dockerfile's is checked by checkBuildStage).
func TestBuildCallers(t *testing.T) {
	for _, tc := range []struct{ file, call string }{
		{"Makefile", "./" + buildScript + " vllm-prober"},
		{"deploy/check.sh", buildScript + ` "$out/vllm-prober"`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			text := readRepoFile(t, tc.file)
			if !strings.Contains(text, tc.call) {
				t.Errorf("%s does not run %s", tc.file, tc.call)
			}
			for _, line := range strings.Split(text, "\n") {
				if _, ok := parseBuild(line); ok && !strings.HasPrefix(strings.TrimSpace(line), "#") {
					t.Errorf("%s runs its own go build: %s", tc.file, strings.TrimSpace(line))
				}
			}
		})
	}
}

// TestDockerfileChecksFail breaks the Dockerfile one way at a time and
// requires the structure check to notice.
func TestDockerfileChecksFail(t *testing.T) {
	checkDockerfileErrs := func(text string) []error {
		_, errs := checkDockerfile(text)
		return errs
	}
	requireChecksFail(t, "Dockerfile", checkDockerfileErrs, []breakCase{
		{"own go build", "deploy/build.sh /out/vllm-prober", "go build -o /out/vllm-prober .", "own go build"},
		{"build information not passed", "REVISION=${REVISION} ", "", "REVISION"},
		{"platform not passed", "GOARCH=${TARGETARCH} ", "", "GOARCH"},
		{"root user", "USER 65532:65532", "USER 0:0", "non-root"},
		{"named user", "USER 65532:65532", "USER nonroot", "numeric"},
		{"no user", "USER 65532:65532\n", "", "numeric"},
		{"port", "EXPOSE 9478", "EXPOSE 8080", "EXPOSE"},
		{"shell entrypoint", `ENTRYPOINT ["/vllm-prober"]`, "ENTRYPOINT /vllm-prober", "ENTRYPOINT"},
		{"runtime base", "gcr.io/distroless/static-debian12:nonroot", "debian:bookworm-slim", "neither distroless"},
		{"scratch without certificates", "gcr.io/distroless/static-debian12:nonroot", "scratch", "CA certificates"},
		{"single stage", "FROM gcr.io/distroless/static-debian12:nonroot", "", "multi-stage"},
		{"no cache mounts", "--mount=type=cache,target=/root/.cache/go-build", "", "cache mounts"},
		{"default config", "--config.file=/etc/vllm-prober/vllm-prober.yml", "--config.file=x.yml", "default config path"},
	})
}

// breakCase is one way to break a checked file: replace old with new, and
// the check must report an error containing want.
type breakCase struct{ name, old, new, want string }

// requireChecksFail breaks the repository file one way per case and
// requires check to notice each.
func requireChecksFail(t *testing.T, file string, check func(text string) []error, cases []breakCase) {
	good := readRepoFile(t, file)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			broken := strings.Replace(good, tc.old, tc.new, 1)
			if broken == good {
				t.Fatalf("%s has no %q", file, tc.old)
			}
			errs := check(broken)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no error containing %q; got %v", tc.want, errs)
		})
	}
}
