package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// binary is the vllm-prober binary built once for the tests that run it as
// a user would.
var binary string

func TestMain(m *testing.M) { os.Exit(daemontest.Main(m, ".", &binary)) }

func runBinary(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return daemontest.Run(t, binary, args...)
}

// checkRun runs the binary with args, reports an exit code other than
// wantCode and output that lacks one of want, and returns the output.
func checkRun(t *testing.T, args []string, wantCode int, want []string) string {
	t.Helper()
	code, out := runBinary(t, args...)
	if code != wantCode {
		t.Errorf("exit code %d, want %d; output:\n%s", code, wantCode, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%.2000s", w, out)
		}
	}
	return out
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"help", []string{"--help"}, 0, []string{"run", "demo", "simulate", "bench", "capacity", "rules", "--log.level", "--config.file", "config.check", "--web.listen-address", "--web.config.file", "--web.telemetry-path", "web.enable-lifecycle"}},
		{"run help", []string{"help", "run"}, 0, []string{"--config.file", "config.check", "--web.listen-address", "--web.config.file", "--web.telemetry-path", "web.enable-lifecycle"}},
		{"version", []string{"--version"}, 0, []string{"vllm-prober, version", "go version:"}},
		{"unknown flag", []string{"--no-such-flag"}, 2, []string{"unknown long flag '--no-such-flag'", "usage:"}},
		{"bad flag value", []string{"run", "--log.level=loud"}, 2, []string{"log.level"}},
		{"bad number names the flag", []string{"simulate", "--max-num-seqs=abc"}, 2, []string{"--max-num-seqs=abc:"}},
		{"simulate help", []string{"help", "simulate"}, 0, []string{"--model", "--max-num-seqs", "--fault.http-500", "--reasoning-tokens", "--embedding-dim", "--fault.bad-tool-call"}},
		{"simulate bad fault rate", []string{"simulate", "--fault.http-500=2", "--web.listen-address=127.0.0.1:0"}, 1, []string{"must be in [0, 1]"}},
		{"config check minimal", []string{"--config.file=deploy/examples/minimal.yml", "--config.check"}, 0, []string{"SUCCESS"}},
		{"config check full", []string{"--config.file=deploy/examples/full.yml", "--config.check"}, 0, []string{"SUCCESS"}},
		{"config check reasoning-tools", []string{"--config.file=deploy/examples/reasoning-tools.yml", "--config.check"}, 0, []string{"SUCCESS: 1 targets, 6 probes"}},
		{"config check missing", []string{"--config.file=no-such.yml", "--config.check"}, 1, []string{"no-such.yml", "FAILED"}},
		{"missing config", []string{"--config.file=no-such.yml"}, 1, []string{"no-such.yml"}},
		{"config check bad dataset line", []string{"--config.file=testdata/bad-dataset/vllm-prober.yml", "--config.check"}, 1, []string{"FAILED", "prompts.jsonl:2: invalid JSON"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := checkRun(t, tc.args, tc.wantCode, tc.want)
			if strings.Contains(out, "goroutine ") || strings.Contains(out, "panic:") {
				t.Errorf("output holds a Go stack:\n%s", out)
			}
		})
	}
}

func TestConfigCheckInvalidFiles(t *testing.T) {
	files, _ := filepath.Glob("config/testdata/invalid-*.yml")
	if len(files) < 20 {
		t.Fatalf("found %d invalid config files, want at least 20", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out := runBinary(t, "--config.file="+f, "--config.check")
			if code != 1 {
				t.Errorf("exit code %d, want 1; output:\n%s", code, out)
			}
			if !regexp.MustCompile(regexp.QuoteMeta(filepath.Base(f)) + `:\d+`).MatchString(out) {
				t.Errorf("error does not name file and line:\n%s", out)
			}
		})
	}
}

func startDaemon(t *testing.T, args ...string) *daemontest.Proc {
	t.Helper()
	return daemontest.Start(t, binary, args...)
}

func get(t *testing.T, method, url string, auth ...string) (int, string) {
	t.Helper()
	return daemontest.Do(t, method, url, auth...)
}

// startSimulator runs the simulator in-process on a loopback port, after
// edit (when not nil) changed its default options, and returns its URL.
func startSimulator(t *testing.T, edit ...func(*simulator.Options)) string {
	t.Helper()
	_, u := startSimulatorServer(t, edit...)
	return u
}

// startSimulatorServer is startSimulator that also returns the server, for
// tests that change its faults or stop it.
func startSimulatorServer(t *testing.T, edit ...func(*simulator.Options)) (*simulator.Server, string) {
	t.Helper()
	o := simulator.DefaultOptions()
	o.Seed = 7
	return simtest.Start(t, o, edit...)
}

// chatConfig is a config of one target "sim" and one chat probe "chat"
// that asks 12*12.
type chatConfig struct {
	url, ledger string
	rate        float64
	timeout     string
	// checked scrapes the server's metrics every second and judges the
	// answer by a regex; the reliability tests leave both off and send at
	// fixed intervals (burstiness inf) instead.
	checked bool
}

func (c chatConfig) String() string {
	global, probe, expect := "", "    burstiness: inf\n", ""
	if c.checked {
		global, probe = "  server_metrics: {interval: 1s, timeout: 1s}\n", ""
		expect = "          expect: {regex: '\\b144\\b'}\n"
	}
	return fmt.Sprintf(`global:
  ledger: {path: %q}
%stargets:
  - name: sim
    url: %s
probes:
  - name: chat
    api: chat
    rate: %g
%s    timeout: %s
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
%s`, c.ledger, global, c.url, c.rate, probe, c.timeout, expect)
}

// writeChatConfig writes the checked chat config to dir/c.yml and returns
// its path.
func writeChatConfig(t *testing.T, dir, simURL string, rate float64, ledger string) string {
	t.Helper()
	p := filepath.Join(dir, "c.yml")
	writeConfig(t, p, simURL, rate, ledger)
	return p
}

// writeConfig writes the checked chat config with a 5s timeout to path.
func writeConfig(t *testing.T, path, simURL string, rate float64, ledger string) {
	t.Helper()
	testfile.Write(t, filepath.Dir(path), filepath.Base(path), chatConfig{simURL, ledger, rate, "5s", true}.String())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	daemontest.WaitFor(t, 15*time.Second, what, cond)
}

func metricsContain(t *testing.T, d *daemontest.Proc, s string) bool {
	_, body := get(t, http.MethodGet, d.URL("/metrics"))
	return strings.Contains(body, s)
}

func TestDaemonEndpointsAndReload(t *testing.T) {
	simURL := startSimulator(t)
	dir := t.TempDir()
	cfgPath, ledger := filepath.Join(dir, "c.yml"), filepath.Join(dir, "ledger.jsonl")
	writeConfig(t, cfgPath, simURL, 5, ledger)
	d := startDaemon(t, "--config.file="+cfgPath, "--web.enable-lifecycle")

	// The server listens before probing starts; ready follows.
	waitFor(t, "ready", func() bool { code, _ := get(t, http.MethodGet, d.URL("/-/ready")); return code == 200 })
	for _, p := range []string{"/-/healthy", "/-/ready", "/", "/api/v1/results"} {
		if code, body := get(t, http.MethodGet, d.URL(p)); code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
	waitFor(t, "accepted requests", func() bool {
		return metricsContain(t, d, `vllm_probe_requests_total{disposition="accepted",probe="chat",replica="",target="sim"}`) &&
			!metricsContain(t, d, `vllm_probe_requests_total{disposition="accepted",probe="chat",replica="",target="sim"} 0`)
	})
	for _, m := range []string{"vllm_prober_build_info", "go_goroutines", "vllm_prober_config_last_reload_successful 1"} {
		if !metricsContain(t, d, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	if code, _ := get(t, http.MethodGet, d.URL("/-/reload")); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/reload: %d, want 405", code)
	}

	t.Run("good reload over HTTP", func(t *testing.T) {
		writeConfig(t, cfgPath, simURL, 4, ledger)
		if code, body := get(t, http.MethodPost, d.URL("/-/reload")); code != 200 {
			t.Fatalf("POST /-/reload: %d %s", code, body)
		}
		if !metricsContain(t, d, "vllm_prober_config_last_reload_successful 1") {
			t.Error("reload gauge not 1")
		}
	})
	t.Run("bad reload over HTTP keeps the old config", func(t *testing.T) {
		if err := os.WriteFile(cfgPath, []byte("targets: [{name: x, url: ftp://x}]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, body := get(t, http.MethodPost, d.URL("/-/reload"))
		if code != http.StatusInternalServerError || !strings.Contains(body, "c.yml:") {
			t.Fatalf("POST /-/reload: %d %s", code, body)
		}
		if !metricsContain(t, d, "vllm_prober_config_last_reload_successful 0") {
			t.Error("reload gauge not 0 after a bad reload")
		}
		if code, _ := get(t, http.MethodGet, d.URL("/probe?target=sim&probe=chat")); code != 200 {
			t.Errorf("old config not kept: /probe answered %d", code)
		}
	})
	t.Run("good reload by SIGHUP", func(t *testing.T) {
		writeConfig(t, cfgPath, simURL, 3, ledger)
		if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "reload by SIGHUP", func() bool { return metricsContain(t, d, "vllm_prober_config_last_reload_successful 1") })
	})
	t.Run("probe endpoint", func(t *testing.T) {
		code, body := get(t, http.MethodGet, d.URL("/probe?target=sim&probe=chat"))
		if code != 200 || !strings.Contains(body, `vllm_probe_success{probe="chat",target="sim"} 1`) ||
			!strings.Contains(body, `vllm_probe_requests_total{disposition="accepted",probe="chat",replica="",target="sim"} 1`) {
			t.Errorf("/probe: %d %s", code, body)
		}
		for _, q := range []string{"?target=sim", "?target=http://example.com&probe=chat", "?target=sim&probe=nope"} {
			if code, _ := get(t, http.MethodGet, d.URL("/probe"+q)); code != http.StatusBadRequest {
				t.Errorf("/probe%s: %d, want 400", q, code)
			}
		}
	})
	t.Run("SIGTERM exits 0 and flushes the ledger", func(t *testing.T) {
		if err := d.Stop(t, syscall.SIGTERM); err != nil {
			t.Fatalf("exit: %v; logs:\n%s", err, d.Logs())
		}
		b, err := os.ReadFile(ledger)
		if err != nil || !strings.Contains(string(b), `"disposition":"accepted"`) {
			t.Errorf("ledger not written: %v %.200s", err, b)
		}
	})
}

func TestDaemonLifecycleOff(t *testing.T) {
	simURL := startSimulator(t)
	cfgPath := writeChatConfig(t, t.TempDir(), simURL, 1, "")
	d := startDaemon(t, "--config.file="+cfgPath)
	if code, _ := get(t, http.MethodPost, d.URL("/-/reload")); code != http.StatusForbidden {
		t.Errorf("POST /-/reload without --web.enable-lifecycle: %d, want 403", code)
	}
}

func TestDaemonBasicAuth(t *testing.T) {
	simURL := startSimulator(t)
	dir := t.TempDir()
	cfgPath, webPath := filepath.Join(dir, "c.yml"), filepath.Join(dir, "web.yml")
	writeConfig(t, cfgPath, simURL, 1, "")
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(webPath, []byte("basic_auth_users:\n  alice: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--config.file="+cfgPath, "--web.config.file="+webPath, "--web.enable-lifecycle")
	for _, p := range []string{"/metrics", "/", "/-/healthy", "/api/v1/results", "/probe?target=sim&probe=chat"} {
		if code, _ := get(t, http.MethodGet, d.URL(p)); code != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d, want 401", p, code)
		}
		if code, _ := get(t, http.MethodGet, d.URL(p), "alice", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong password: %d, want 401", p, code)
		}
		if code, _ := get(t, http.MethodGet, d.URL(p), "alice", "s3cret"); code != 200 {
			t.Errorf("GET %s with credentials: %d, want 200", p, code)
		}
	}
	if code, _ := get(t, http.MethodPost, d.URL("/-/reload")); code != http.StatusUnauthorized {
		t.Errorf("POST /-/reload without credentials: %d, want 401", code)
	}
}

func TestRulesCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "rules.yml")
	checkedIn, err := os.ReadFile("deploy/prometheus/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"low-traffic warnings on stderr", []string{"rules", "--config.file=deploy/examples/full.yml", "--output=" + out}, 0,
			[]string{"Alert rule adjusted", "probe=chat-json", "windows widened from 30m/5m to 1h/10m"}},
		{"tests", []string{"rules", "--tests", "--config.file=deploy/examples/minimal.yml", "--rule-file=r.yml"}, 0,
			[]string{"rule_files:\n  - r.yml", "alert_rule_test:", "alertname: VLLMProbeErrorBudgetFastBurn"}},
		{"scaled windows and job", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--window-scale=0.0166667", "--min-requests=1", "--job=probers"}, 0,
			[]string{`ratio_rate5s`, `absent(up{job="probers"})`, "for: 5s"}},
		{"invalid config", []string{"rules", "--config.file=config/testdata/invalid-api.yml"}, 1, []string{"invalid-api.yml", "responses"}},
		{"missing config", []string{"rules", "--config.file=no-such.yml"}, 1, []string{"no-such.yml"}},
		{"negative scale", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--window-scale=-1"}, 2, []string{"--window-scale=-1: must be a finite number > 0"}},
		// rules.Options reads a zero as the default: a 0 on the command
		// line must be refused, not replaced by 1, 30 or 10m.
		{"zero scale", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--window-scale=0"}, 2, []string{"--window-scale=0: must be a finite number > 0"}},
		{"NaN scale", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--window-scale=NaN"}, 2, []string{"--window-scale=NaN: must be a finite number > 0"}},
		{"zero min requests", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--min-requests=0"}, 2, []string{"--min-requests=0: must be a finite number > 0"}},
		{"negative page for", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--page-for=-1m"}, 2, []string{"--page-for=-1m0s: must not be negative"}},
		{"zero latency window", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--latency-window=0s"}, 2, []string{"--latency-window=0s: must be > 0"}},
		{"zero ticket for", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--ticket-for=0s"}, 2, []string{"--ticket-for=0s: must be > 0"}},
		{"empty job", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--job="}, 2, []string{"--job: must not be empty"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkRun(t, tc.args, tc.wantCode, tc.want)
		})
	}
	t.Run("output file is the checked-in rule file", func(t *testing.T) {
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(checkedIn) {
			t.Errorf("--output differs from deploy/prometheus/rules.yml")
		}
	})
}

// TestSimulateZeroFlags checks that simulate refuses the zero values
// simulator.Options reads as "use the default", naming the flag, instead of
// starting with the default in their place.
func TestSimulateZeroFlags(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--stream-interval=0", "--stream-interval=0: must be at least 1"},
		{"--embedding-dim=0", "--embedding-dim=0: must be at least 1"},
		{"--kv-cache-tokens=0", "--kv-cache-tokens=0: must be at least 1"},
		{"--trace-limit=0", "--trace-limit=0: must be at least 1"},
		{"--model=", "--model: must not be empty"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			// The context only stops a simulator that did start, so the
			// test fails instead of hanging.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			code, out, err := daemontest.Output(exec.CommandContext(ctx, binary, "simulate", tc.flag, "--web.listen-address=127.0.0.1:0"))
			if err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatalf("simulate %s started and ran until killed:\n%s", tc.flag, out)
			}
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 1 and %q", code, out, tc.want)
			}
		})
	}
}

// TestRulesOutputWholeOrNothing checks that a --output write that fails
// part way (here at a file size limit) leaves the previous file as it was,
// not half a rule file.
func TestRulesOutputWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(out, []byte("previous\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// ulimit -f 8 caps every file the process writes at 4 to 8 KiB (512- or
	// 1024-byte blocks, by shell); the rules of minimal.yml are larger.
	cmd := exec.Command("sh", "-c", `ulimit -f 8 && exec "$0" "$@"`, binary, "rules",
		"--config.file=deploy/examples/minimal.yml", "--output="+out)
	code, stderr, err := daemontest.Output(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 || !strings.Contains(stderr, "write output "+out) {
		t.Errorf("exit %d, output:\n%s\nwant exit 1 and the write error", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "previous\n" {
		t.Errorf("--output after a failed write holds %d bytes, want the previous file", len(b))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after a failed write, want only rules.yml", len(entries))
	}
}
