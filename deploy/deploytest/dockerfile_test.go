package deploytest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction with its continuation lines
// joined, and the index of the stage it belongs to.
type instruction struct {
	cmd   string
	args  string
	stage int
}

// parseDockerfile splits a Dockerfile into instructions. Comment lines,
// also inside continued instructions, are dropped as Docker does.
func parseDockerfile(text string) []instruction {
	var out []instruction
	var cur strings.Builder
	stage := -1
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
	}
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return out
}

// buildCommand describes the flags of a `go build` command line.
type buildCommand struct {
	cgoDisabled bool
	trimpath    bool
	ldflags     []string // -s, -w and the -X variable names, sorted
	output      string
}

var xFlag = regexp.MustCompile(`-X\s+([\w./-]+)=`)

// parseBuild finds the `go build` command in text; ok is false without one.
func parseBuild(text string) (buildCommand, bool) {
	i := strings.Index(text, "go build")
	if i < 0 {
		return buildCommand{}, false
	}
	env, cmd := text[:i], text[i:]
	b := buildCommand{cgoDisabled: strings.Contains(env, "CGO_ENABLED=0"), trimpath: strings.Contains(cmd, " -trimpath")}
	if _, ld, ok := strings.Cut(cmd, `-ldflags "`); ok {
		ld, _, _ = strings.Cut(ld, `"`)
		for _, f := range strings.Fields(ld) {
			if f == "-s" || f == "-w" {
				b.ldflags = append(b.ldflags, f)
			}
		}
		for _, m := range xFlag.FindAllStringSubmatch(ld, -1) {
			b.ldflags = append(b.ldflags, m[1])
		}
		slices.Sort(b.ldflags)
	}
	if _, o, ok := strings.Cut(cmd, " -o "); ok {
		b.output = strings.Fields(o)[0]
	}
	return b, true
}

// versionVars are the build information variables every build must set.
var versionVars = []string{"Branch", "BuildDate", "BuildUser", "Revision", "Version"}

func checkBuild(b buildCommand) []error {
	var errs []error
	if !b.cgoDisabled {
		errs = append(errs, fmt.Errorf("go build: CGO_ENABLED=0 missing, the binary would not be static"))
	}
	if !b.trimpath {
		errs = append(errs, fmt.Errorf("go build: -trimpath missing"))
	}
	for _, v := range versionVars {
		if !slices.Contains(b.ldflags, "github.com/prometheus/common/version."+v) {
			errs = append(errs, fmt.Errorf("go build: -ldflags does not set version.%s", v))
		}
	}
	return errs
}

// checkDockerfile checks the structure of the image build and returns the
// default config file the image copies in (source path in the repo).
func checkDockerfile(text string) (string, []error) {
	ins := parseDockerfile(text)
	var froms []instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in)
		}
	}
	if len(froms) < 2 {
		return "", []error{fmt.Errorf("want a multi-stage build, got %d stages", len(froms))}
	}
	errs := checkBuildStage(ins, froms[0])
	final := len(froms) - 1
	errs = append(errs, checkRuntimeBase(ins, froms[final].args, final)...)
	src, rerrs := checkRuntimeStage(ins, final)
	return src, append(errs, rerrs...)
}

var buildStageFrom = regexp.MustCompile(`(?i)golang:\S+\s+AS\s+build$`)

// buildScript is the one build command; the Dockerfile, `make build` and
// deploy/check.sh run it (checkBuildScript checks its flags).
const buildScript = "deploy/build.sh"

// buildScriptEnv are the variables the build stage must hand the build
// script: the target platform and the build information.
var buildScriptEnv = []string{"GOOS=${TARGETOS}", "GOARCH=${TARGETARCH}", "VERSION=${VERSION}", "REVISION=${REVISION}",
	"BRANCH=${BRANCH}", "BUILD_USER=${BUILD_USER}", "BUILD_DATE=${BUILD_DATE}"}

func checkBuildStage(ins []instruction, from instruction) []error {
	var errs []error
	if !buildStageFrom.MatchString(from.args) {
		errs = append(errs, fmt.Errorf("first stage %q is not a golang image named build", from.args))
	}
	found := false
	for _, in := range ins {
		if in.stage != 0 || in.cmd != "RUN" {
			continue
		}
		if _, ok := parseBuild(in.args); ok {
			errs = append(errs, fmt.Errorf("build stage runs its own go build instead of %s", buildScript))
		}
		if !strings.Contains(in.args, buildScript+" ") {
			continue
		}
		found = true
		for _, env := range buildScriptEnv {
			if !strings.Contains(in.args, env+" ") {
				errs = append(errs, fmt.Errorf("%s: %s not passed", buildScript, env))
			}
		}
		if !strings.Contains(in.args, "--mount=type=cache,target=/go/pkg/mod") || !strings.Contains(in.args, "--mount=type=cache,target=/root/.cache/go-build") {
			errs = append(errs, fmt.Errorf("%s: no module and build cache mounts", buildScript))
		}
	}
	if !found {
		errs = append(errs, fmt.Errorf("build stage does not run %s", buildScript))
	}
	return errs
}

// checkBuildScript checks the go build command of the build script.
func checkBuildScript(text string) []error {
	var builds []buildCommand
	for _, line := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
		if b, ok := parseBuild(line); ok && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			builds = append(builds, b)
		}
	}
	if len(builds) != 1 {
		return []error{fmt.Errorf("%s runs %d go build commands, want 1", buildScript, len(builds))}
	}
	return checkBuild(builds[0])
}

// checkRuntimeBase requires distroless static, or scratch with CA
// certificates copied in.
func checkRuntimeBase(ins []instruction, base string, final int) []error {
	switch {
	case strings.HasPrefix(base, "gcr.io/distroless/static"):
		return nil
	case base == "scratch":
		for _, in := range ins {
			if in.stage == final && in.cmd == "COPY" && strings.Contains(in.args, "ca-certificates") {
				return nil
			}
		}
		return []error{fmt.Errorf("scratch runtime without CA certificates")}
	}
	return []error{fmt.Errorf("runtime image %q is neither distroless static nor scratch", base)}
}

var numericUser = regexp.MustCompile(`^([0-9]+)(:([0-9]+))?$`)

func checkRuntimeStage(ins []instruction, final int) (string, []error) {
	var errs []error
	seen := map[string]string{}
	configSrc := ""
	for _, in := range ins {
		if in.stage != final {
			continue
		}
		seen[in.cmd] = in.args
		if in.cmd == "COPY" && strings.HasSuffix(in.args, " /etc/vllm-prober/vllm-prober.yml") {
			configSrc = strings.Fields(in.args)[0]
		}
		if in.cmd == "COPY" && strings.HasPrefix(in.args, "--from=build ") && !strings.HasSuffix(in.args, " /vllm-prober") {
			errs = append(errs, fmt.Errorf("COPY --from=build %q does not install /vllm-prober", in.args))
		}
	}
	m := numericUser.FindStringSubmatch(seen["USER"])
	if m == nil || m[1] == "0" || m[3] == "0" {
		errs = append(errs, fmt.Errorf("USER %q is not a numeric non-root user", seen["USER"]))
	}
	if seen["EXPOSE"] != "9478" {
		errs = append(errs, fmt.Errorf("EXPOSE %q, want 9478", seen["EXPOSE"]))
	}
	var entry, cmd []string
	if err := json.Unmarshal([]byte(seen["ENTRYPOINT"]), &entry); err != nil || !slices.Equal(entry, []string{"/vllm-prober"}) {
		errs = append(errs, fmt.Errorf(`ENTRYPOINT %q, want ["/vllm-prober"]`, seen["ENTRYPOINT"]))
	}
	if err := json.Unmarshal([]byte(seen["CMD"]), &cmd); err != nil || !slices.Contains(cmd, "--config.file=/etc/vllm-prober/vllm-prober.yml") {
		errs = append(errs, fmt.Errorf("CMD %q does not name the default config path", seen["CMD"]))
	}
	if configSrc == "" {
		errs = append(errs, fmt.Errorf("no default config copied to /etc/vllm-prober/vllm-prober.yml"))
	}
	return configSrc, errs
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestDockerfile(t *testing.T) {
	src, errs := checkDockerfile(readRepoFile(t, "Dockerfile"))
	for _, err := range errs {
		t.Error(err)
	}
	if src == "" {
		return
	}
	data := readRepoFile(t, src)
	if _, err := loadConfig(t.TempDir(), []byte(data)); err != nil {
		t.Errorf("default config %s: %v", src, err)
	}
	if ignored(readRepoFile(t, ".dockerignore"), src) {
		t.Errorf(".dockerignore excludes the default config %s", src)
	}
}
