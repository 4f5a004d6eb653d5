package config

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// validProbe is a complete probe for tests that vary one thing elsewhere.
const validProbe = `
probes:
  - name: chat-short
    api: chat
    rate: 0.2
    workload: {random: {input_tokens: 8, output_tokens: 8}}
`

const validTarget = `
targets:
  - name: llama-8b
    url: http://127.0.0.1:8000
`

func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(doc), filepath.Join(t.TempDir(), "vllm-prober.yml"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

// TestLoadExamples loads every config in deploy/examples, so an example
// added there is checked without being listed here.
func TestLoadExamples(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "deploy", "examples", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	if want := []string{"full.yml", "minimal.yml", "reasoning-tools.yml"}; !reflect.DeepEqual(names, want) {
		t.Errorf("examples %v, want %v", names, want)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cfg, err := Load(filepath.Join("..", "deploy", "examples", name))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(cfg.Targets) == 0 || len(cfg.Probes) == 0 {
				t.Fatalf("no targets or probes: %+v", cfg)
			}
		})
	}
}

// loadExample loads deploy/examples/name and returns it with the absolute
// directory its relative paths resolve against.
func loadExample(t *testing.T, name string) (*Config, string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "deploy", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}

func TestFullExampleValues(t *testing.T) {
	cfg, dir := loadExample(t, "full.yml")
	tg, _ := cfg.Target("llama-8b")
	file, _ := cfg.Probe("completions-file")
	js, _ := cfg.Probe("chat-json")
	tests := []struct {
		name      string
		got, want any
	}{
		{"credentials file resolved", tg.HTTPClientConfig.Authorization.CredentialsFile, filepath.Join(dir, "api-key.txt")},
		{"follow redirects", tg.HTTPClientConfig.FollowRedirects, false},
		{"tls server name", tg.HTTPClientConfig.TLSConfig.ServerName, "vllm.example.internal"},
		{"workload file resolved", file.Workload.File, filepath.Join(dir, "prompts.jsonl")},
		{"json schema resolved", js.Quality.JSONSchema, filepath.Join(dir, "answer.schema.json")},
		{"json schema compiled at load", js.Quality.Schema != nil, true},
		{"burstiness inf", file.Burstiness, math.Inf(1)},
		{"timeout", file.Timeout, model.Duration(time.Minute)},
		{"allow", cfg.Global.ServerMetrics.Allow.Source, "vllm:.*"},
		{"explicit empty metrics path", cfg.Targets[1].MetricsPath, ""},
		{"expect regex", js.Workload.Prompts[0].Expect.Regex.Source, `"answer":\s*7\b`},
		{"extra", js.Request.Extra["response_format"], map[string]any{"type": "json_object"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	cfg := mustParse(t, validTarget+validProbe)
	p, tg := cfg.Probes[0], cfg.Targets[0]
	tests := []struct {
		name      string
		got, want any
	}{
		{"burstiness", p.Burstiness, 1.0},
		{"max_in_flight", p.MaxInFlight, 16},
		{"timeout", p.Timeout, model.Duration(30 * time.Second)},
		{"max_tokens", p.Request.MaxTokens, 64},
		{"objective", p.Objective, 0.99},
		{"finish_reasons", p.Quality.FinishReasons, []string{"stop", "length"}},
		{"min_output_tokens", p.Quality.MinOutputTokens, 1},
		{"history_limit", cfg.Global.HistoryLimit, 200},
		{"ledger", cfg.Global.Ledger, Ledger{MaxSizeMB: 64, MaxFiles: 4, RecordText: RecordTextFailures}},
		{"scrape interval", cfg.Global.ServerMetrics.Interval, model.Duration(15 * time.Second)},
		{"scrape timeout", cfg.Global.ServerMetrics.Timeout, model.Duration(5 * time.Second)},
		{"allow", cfg.Global.ServerMetrics.Allow.Source, DefaultServerMetricsAllow},
		{"metrics_path", tg.MetricsPath, "/metrics"},
		{"follow_redirects", tg.HTTPClientConfig.FollowRedirects, false},
		{"enable_http2", tg.HTTPClientConfig.EnableHTTP2, true},
		{"target probes", len(cfg.ProbesFor(tg)), 1},
		{"probe line", p.Line, 7},
		{"target line", tg.Line, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}
	// Defaults must not be shared between probes or with DefaultProbe.
	cfg.Probes[0].Quality.FinishReasons[0] = "changed"
	if DefaultProbe.Quality.FinishReasons[0] != "stop" {
		t.Errorf("a loaded config aliases DefaultProbe.Quality.FinishReasons")
	}
}

func TestAllowAnchored(t *testing.T) {
	tests := []struct {
		name, doc, metric string
		want              bool
	}{
		{"default matches vllm family", "", "vllm:num_requests_running", true},
		{"default is anchored", "", "x_vllm:num_requests_running", false},
		{"custom", "global: {server_metrics: {allow: 'vllm:num_.*'}}\n", "vllm:num_requests_waiting", true},
		{"custom is anchored", "global: {server_metrics: {allow: 'vllm:num'}}\n", "vllm:num_requests_waiting", false},
		{"empty means default", "global: {server_metrics: {allow: ''}}\n", "vllm:kv_cache_usage_perc", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, tc.doc+validTarget+validProbe)
			if got := cfg.Global.ServerMetrics.Allow.MatchString(tc.metric); got != tc.want {
				t.Errorf("MatchString(%q) = %v, want %v", tc.metric, got, tc.want)
			}
		})
	}
}

func TestBurstiness(t *testing.T) {
	tests := []struct {
		value string
		want  float64
	}{
		{"inf", math.Inf(1)}, {".inf", math.Inf(1)}, {"+inf", math.Inf(1)}, {"Inf", math.Inf(1)},
		{".Inf", math.Inf(1)}, {"2.5", 2.5}, {"1", 1},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			cfg := mustParse(t, validTarget+strings.Replace(validProbe, "rate: 0.2", "rate: 0.2\n    burstiness: "+tc.value, 1))
			if got := cfg.Probes[0].Burstiness; got != tc.want {
				t.Errorf("burstiness %s = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

func TestTargetSettings(t *testing.T) {
	tests := []struct {
		name, extra, url     string
		wantURL, wantMetrics string
	}{
		{"metrics_path absent", "", "http://h:8000", "http://h:8000", "/metrics"},
		{"metrics_path empty disables", "    metrics_path: \"\"\n", "http://h:8000", "http://h:8000", ""},
		{"metrics_path custom", "    metrics_path: /vllm/metrics\n", "http://h:8000", "http://h:8000", "/vllm/metrics"},
		{"trailing slash trimmed", "", "https://h/prefix/", "https://h/prefix", "/metrics"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "targets:\n  - name: a\n    url: " + tc.url + "\n" + tc.extra + validProbe
			tg := mustParse(t, doc).Targets[0]
			if tg.URL != tc.wantURL || tg.MetricsPath != tc.wantMetrics {
				t.Errorf("url %q metrics_path %q, want %q %q", tg.URL, tg.MetricsPath, tc.wantURL, tc.wantMetrics)
			}
		})
	}
}

func TestLookups(t *testing.T) {
	doc := `
targets:
  - {name: all, url: "http://a"}
  - {name: some, url: "http://b", probes: [p3, p1]}
probes:
  - &p {name: p1, api: completions, rate: 1, workload: {prompts: [{prompt: hi}]}}
  - {<<: *p, name: p2}
  - {<<: *p, name: p3, rate: 2}
`
	cfg := mustParse(t, doc)
	names := func(ps []Probe) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"all probes", names(cfg.ProbesFor(cfg.Targets[0])), []string{"p1", "p2", "p3"}},
		{"listed probes in listed order", names(cfg.ProbesFor(cfg.Targets[1])), []string{"p3", "p1"}},
		{"merge key override", cfg.Probes[2].Rate, 2.0},
		{"merge key inherited", cfg.Probes[1].Workload.Prompts[0].Prompt, "hi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}
	if p, ok := cfg.Probe("p2"); !ok || p.Name != "p2" {
		t.Errorf("Probe(p2) = %v, %v", p.Name, ok)
	}
	if _, ok := cfg.Probe("nope"); ok {
		t.Errorf("Probe(nope) found")
	}
	if tg, ok := cfg.Target("some"); !ok || tg.URL != "http://b" {
		t.Errorf("Target(some) = %v, %v", tg.URL, ok)
	}
	if _, ok := cfg.Target("nope"); ok {
		t.Errorf("Target(nope) found")
	}
}

func TestNamePattern(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"llama-8b", true}, {"_x", true}, {"a.b_c-1", true}, {strings.Repeat("a", 64), true},
		{"", false}, {"8b", false}, {"a b", false}, {"a/b", false}, {"ä", false}, {strings.Repeat("a", 65), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NamePattern.MatchString(tc.name); got != tc.ok {
				t.Errorf("NamePattern.MatchString(%q) = %v, want %v", tc.name, got, tc.ok)
			}
		})
	}
}

func TestStringHidesSecrets(t *testing.T) {
	doc := `
targets:
  - name: a
    url: http://a
    http_client_config:
      authorization: {credentials_file: token.txt}
      proxy_url: http://user:s3cr3t-pass@proxy:3128
  - name: b
    url: http://b
    http_client_config:
      proxy_url: http://sk-TOKENUSER@proxy:3128/?key=QUERYKEY
` + validProbe
	cfg := mustParse(t, doc)
	out := cfg.String()
	for _, secret := range []string{"s3cr3t", "sk-TOKENUSER", "QUERYKEY"} {
		if strings.Contains(out, secret) {
			t.Errorf("String() shows %s:\n%s", secret, out)
		}
	}
}

func TestInlineSecretsRefused(t *testing.T) {
	for _, field := range []string{
		"authorization: {credentials: s3cr3t-token}",
		"basic_auth: {username: u, password: s3cr3t-pass}",
		"bearer_token: s3cr3t-bearer",
		"oauth2: {client_id: c, client_secret: s3cr3t-client, token_url: http://t}",
	} {
		t.Run(field, func(t *testing.T) {
			_, err := Parse([]byte("targets:\n  - name: a\n    url: http://a\n    http_client_config:\n      "+field+"\n"+validProbe), "c.yml")
			if err == nil || !strings.Contains(err.Error(), "inline secrets are not allowed") || strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("err = %v, want an inline-secret error without the secret", err)
			}
		})
	}
}

func TestStringRoundTrip(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "deploy", "examples", "full.yml"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse([]byte(cfg.String()), "again.yml")
	if err != nil {
		t.Fatalf("String() output does not parse: %v\n%s", err, cfg)
	}
	if again.String() != cfg.String() {
		t.Errorf("round trip changed the config:\n%s\nvs\n%s", cfg, again)
	}
}

func TestRegexpMarshal(t *testing.T) {
	re, err := NewRegexp(`\b144\b`)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(Expect{Regex: re})
	if err != nil || !strings.Contains(string(y), `regex: \b144\b`) {
		t.Errorf("yaml: %s %v", y, err)
	}
	j, err := json.Marshal(struct{ R Regexp }{re})
	if err != nil || string(j) != `{"R":"\\b144\\b"}` {
		t.Errorf("json: %s %v", j, err)
	}
	var back struct{ R Regexp }
	if err := json.Unmarshal(j, &back); err != nil || !back.R.MatchString("x 144 y") {
		t.Errorf("json round trip: %v", err)
	}
	if got := (Regexp{Regexp: regexp.MustCompile("a+")}).String(); got != "a+" {
		t.Errorf("String of a Regexp without Source = %q, want a+", got)
	}
	var zero Regexp
	if zero.String() != "" || !zero.IsZero() || re.IsZero() {
		t.Errorf("zero Regexp: String %q IsZero %v", zero.String(), zero.IsZero())
	}
}

func TestParseResolvesRelativeFiles(t *testing.T) {
	dir := t.TempDir()
	testfile.Write(t, dir, "p.jsonl", `{"prompt":"x"}`+"\n")
	doc := validTarget + strings.Replace(validProbe, "{random: {input_tokens: 8, output_tokens: 8}}", "{file: p.jsonl}", 1)
	cfg, err := Parse([]byte(doc), filepath.Join(dir, "c.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Probes[0].Workload.File, filepath.Join(dir, "p.jsonl"); got != want {
		t.Errorf("workload.file = %q, want %q", got, want)
	}
}

func TestProbesForUnknownNamesSkipped(t *testing.T) {
	cfg := mustParse(t, validTarget+validProbe)
	got := cfg.ProbesFor(Target{Probes: []string{"chat-short", "gone"}})
	if len(got) != 1 || got[0].Name != "chat-short" {
		t.Errorf("ProbesFor = %v", got)
	}
	all := cfg.ProbesFor(Target{})
	all[0].Name = "changed"
	if !slices.ContainsFunc(cfg.Probes, func(p Probe) bool { return p.Name == "chat-short" }) {
		t.Errorf("ProbesFor result aliases cfg.Probes")
	}
}
