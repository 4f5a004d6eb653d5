//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// Names of the alert test's target and probe, and its probe's TTFT SLO:
// the simulator answers in ~20ms, and the SLO leaves room for the stalls of
// a loaded shared machine, which in 10s windows weigh 60 times more than in
// production's 10m ones.
const (
	alertTarget = "e2e-sim"
	alertProbe  = "chat-arith"
	alertTTFT   = 2 * time.Second
)

// alertWindowScale shrinks every window 60 times: the 10m/5m page pair
// becomes 10s/5s, the 10m p99 window 10s, a 10m for: 10s.
const alertWindowScale = "0.0166667"

// proberConfig probes the simulator at 10 requests/s with constant gaps, so
// even the 5s short window holds 50 requests (rules wants 30), with
// max_in_flight as the test asks.
const proberConfig = `global:
  server_metrics: {interval: 2s, timeout: 1s}
targets:
  - name: %s
    url: %s
probes:
  - name: %s
    api: chat
    rate: 10
    burstiness: inf
    max_in_flight: %d
    timeout: 10s
    request: {max_tokens: 8}
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
          expect: {regex: '\b144\b'}
    slo: {ttft: %s}
    objective: 0.99
`

const prometheusConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [rules.yml, dashboard_rules.yml]
alerting:
  alertmanagers:
    - static_configs: [{targets: ['%s']}]
scrape_configs:
  - job_name: vllm-prober
    static_configs: [{targets: ['%s']}]
`

// alertStack is the simulator, the prober, Prometheus and Alertmanager of
// the alert test.
type alertStack struct {
	dir     string
	simURL  string
	prober  *daemontest.Proc
	prom    *toolProc
	am      *toolProc
	webhook *webhook
	// cfg is the prober's configuration and rules the scaled rule file
	// Prometheus loads: the tests take labels, windows and the objective
	// from them.
	cfg   *config.Config
	rules *rules.RuleFile
}

// toolProc is a Prometheus or Alertmanager process.
type toolProc struct {
	name string
	addr string
	cmd  *exec.Cmd
	logs *daemontest.SyncBuffer
}

func (p *toolProc) url(path string) string { return "http://" + p.addr + path }

// startTool runs a Debian tool listening on addr, waits for its /-/ready and
// kills it at cleanup.
func startTool(t *testing.T, name, addr string, args ...string) *toolProc {
	t.Helper()
	p := &toolProc{name: name, addr: addr, logs: &daemontest.SyncBuffer{}}
	p.cmd = exec.Command(daemontest.RequireTool(t, name), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(p.url("/-/ready")); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready on %s; logs:\n%s", name, addr, p.logs.Tail(4000))
	return nil
}

// startAlertStack starts everything on loopback ports. The rule file is
// what `vllm-prober rules` generates from the prober's own config with the
// test window scale; Alertmanager runs the example configuration of
// deploy/alertmanager with its webhooks pointed at the test's receiver and
// its waits shortened.
func startAlertStack(t *testing.T, maxInFlight int) *alertStack {
	t.Helper()
	s := &alertStack{dir: t.TempDir(), webhook: newWebhook(t)}
	_, s.simURL = simtest.Start(t, simulator.DefaultOptions())

	cfgPath := testfile.Write(t, s.dir, "prober.yml", fmt.Sprintf(proberConfig, alertTarget, s.simURL, alertProbe, maxInFlight, alertTTFT))
	rulesPath := filepath.Join(s.dir, "rules.yml")
	// Prometheus's service discovery hands over the first targets up to 5s
	// after start, so absent(up) holds that long; the prober-health for: of
	// 5m, scaled to 5s, would fire VLLMProberAbsent at startup. 10m (10s)
	// keeps the alert meaningful without that race. The schedule lag
	// threshold (not scaled) tolerates stalls up to the bucket above the
	// TTFT SLO, like the latency alert does.
	code, out := daemontest.Run(t, binary, "rules", "--config.file="+cfgPath, "--window-scale="+alertWindowScale,
		"--health-for=10m", "--schedule-lag=2.5s", "--output="+rulesPath)
	if code != 0 {
		t.Fatalf("vllm-prober rules: exit %d\n%s", code, out)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	s.cfg, s.rules = cfg, readRuleFile(t, rulesPath)
	writeDashboardRules(t, cfgPath, filepath.Join(s.dir, "dashboard_rules.yml"), rulesPath)
	checkRules(t, filepath.Join(s.dir, "rules.yml"), filepath.Join(s.dir, "dashboard_rules.yml"))

	s.prober = daemontest.Start(t, binary, "--config.file="+cfgPath)

	amAddr := daemontest.FreeAddr(t)
	amCfg := testfile.Write(t, s.dir, "alertmanager.yml", alertmanagerConfig(t, s.webhook.url))
	s.am = startTool(t, "prometheus-alertmanager", amAddr, "--config.file="+amCfg,
		"--storage.path="+filepath.Join(s.dir, "am"), "--web.listen-address="+amAddr, "--cluster.listen-address=")

	promAddr := daemontest.FreeAddr(t)
	promCfg := testfile.Write(t, s.dir, "prometheus.yml", fmt.Sprintf(prometheusConfig, amAddr, s.prober.Addr))
	// No --enable-feature=native-histograms: Prometheus 2.42 would then drop
	// the classic buckets every rule and panel reads.
	s.prom = startTool(t, "prometheus", promAddr, "--config.file="+promCfg,
		"--storage.tsdb.path="+filepath.Join(s.dir, "tsdb"), "--web.listen-address="+promAddr)
	return s
}

// writeDashboardRules writes the recording rules of the unscaled windows
// that the overview dashboard reads by name (ratio_rate1h, 6h, 1d) and the
// scaled rule file lacks; alerts and series the scaled file already
// records are left out.
func writeDashboardRules(t *testing.T, cfgPath, path, scaledPath string) {
	t.Helper()
	code, out := daemontest.Run(t, binary, "rules", "--config.file="+cfgPath, "--output="+path)
	if code != 0 {
		t.Fatalf("vllm-prober rules: exit %d\n%s", code, out)
	}
	scaled, full := readRuleFile(t, scaledPath), readRuleFile(t, path)
	have := map[string]bool{}
	for r := range scaled.Rules() {
		have[r.Record] = true
	}
	var keep []rules.Rule
	for r := range full.Rules() {
		if r.Record != "" && !have[r.Record] {
			keep = append(keep, r)
		}
	}
	b, err := rules.Marshal(&rules.RuleFile{Groups: []rules.RuleGroup{{Name: "dashboard-windows", Rules: keep}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	testfile.Write(t, filepath.Dir(path), filepath.Base(path), string(b))
}

func readRuleFile(t *testing.T, path string) *rules.RuleFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rf rules.RuleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return &rf
}

// checkRules runs promtool check rules on the files Prometheus will load.
func checkRules(t *testing.T, files ...string) {
	t.Helper()
	out, err := exec.Command(daemontest.RequireTool(t, "promtool"), append([]string{"check", "rules"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

var amTimingRE = regexp.MustCompile(`(?m)^(\s*)(group_wait|group_interval|repeat_interval):\s*\S+`)

// alertmanagerConfig is deploy/alertmanager/alertmanager.yml with every
// webhook on the test's receiver and waits of seconds.
func alertmanagerConfig(t *testing.T, webhookURL string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "alertmanager", "alertmanager.yml"))
	if err != nil {
		t.Fatal(err)
	}
	const example = "http://127.0.0.1:5001"
	cfg := string(b)
	if !strings.Contains(cfg, example) {
		t.Fatalf("deploy/alertmanager/alertmanager.yml has no webhook on %s to redirect to the test receiver", example)
	}
	cfg = strings.ReplaceAll(cfg, example, webhookURL)
	return amTimingRE.ReplaceAllStringFunc(cfg, func(m string) string {
		sub := amTimingRE.FindStringSubmatch(m)
		v := map[string]string{"group_wait": "1s", "group_interval": "2s", "repeat_interval": "1m"}[sub[2]]
		return sub[1] + sub[2] + ": " + v
	})
}

// pair is the labels of the stack's one (target, probe), from its config.
func (s *alertStack) pair() map[string]string {
	return map[string]string{"target": s.cfg.Targets[0].Name, "probe": s.cfg.Probes[0].Name}
}

// pairSel is the PromQL selector of the stack's pair.
func (s *alertStack) pairSel() string {
	p := s.pair()
	return fmt.Sprintf("{target=%q,probe=%q}", p["target"], p["probe"])
}

// severePage is the labels of the pair's fast-burn page with the shortest
// long window (the 12x pair), as the rule file Prometheus loads has them.
func (s *alertStack) severePage(t *testing.T) map[string]string {
	t.Helper()
	var best map[string]string
	var bestLong time.Duration
	for r := range s.rules.Rules() {
		if r.Alert != rules.AlertFastBurn || r.Labels["target"] != s.pair()["target"] || r.Labels["probe"] != s.pair()["probe"] {
			continue
		}
		long, err := model.ParseDuration(r.Labels["long_window"])
		if err != nil {
			t.Fatalf("%s long_window %q: %v", r.Alert, r.Labels["long_window"], err)
		}
		if best == nil || time.Duration(long) < bestLong {
			best, bestLong = with(r.Labels, "alertname", r.Alert), time.Duration(long)
		}
	}
	if best == nil {
		t.Fatalf("the rule file has no %s for %v", rules.AlertFastBurn, s.pair())
	}
	return best
}
