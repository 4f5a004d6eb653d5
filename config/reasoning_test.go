package config

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// TestReasoningAndToolKeys: slo.ttfa and the ttfa histogram load;
// quality.tool_call's schema is read relative to the config file and
// compiled at load; a tool-call probe accepts finish reason tool_calls
// unless it lists finish_reasons itself; Config.String reloads the same.
func TestReasoningAndToolKeys(t *testing.T) {
	dir := t.TempDir()
	testfile.Write(t, dir, "args.json", `{"type":"object"}`)
	doc := validTarget + `
probes:
  - name: think
    api: chat
    rate: 0.2
    histograms: [ttft, ttfa]
    slo: {ttft: 2s, ttfa: 5s}
    workload: {random: {input_tokens: 8, output_tokens: 8}}
  - name: tools
    api: chat
    rate: 0.2
    request: {extra: {tools: [{type: function, function: {name: get_weather}}], tool_choice: required}}
    quality:
      tool_call: {name: get_weather, arguments_schema: args.json}
    workload: {random: {input_tokens: 8, output_tokens: 8}}
  - name: tools-strict
    api: chat
    rate: 0.2
    request: {extra: {tools: [{type: function, function: {name: get_weather}}]}}
    quality:
      finish_reasons: [tool_calls]
      tool_call: {name: get_weather}
    workload: {random: {input_tokens: 8, output_tokens: 8}}
`
	cfg, err := Parse([]byte(doc), filepath.Join(dir, "vllm-prober.yml"))
	if err != nil {
		t.Fatal(err)
	}
	think, tools, strict := cfg.Probes[0], cfg.Probes[1], cfg.Probes[2]
	if time.Duration(think.SLO.TTFA) != 5*time.Second || !think.HistogramSelection().Has(HistogramTTFA) {
		t.Errorf("think: slo.ttfa %v, histograms %v", think.SLO.TTFA, think.Histograms)
	}
	tc := tools.Quality.ToolCall
	if tc == nil || tc.Name != "get_weather" || tc.ArgumentsSchema != filepath.Join(dir, "args.json") || tc.Schema == nil {
		t.Fatalf("tools: tool_call %+v", tc)
	}
	if want := []string{"stop", "length", "tool_calls"}; !reflect.DeepEqual(tools.Quality.FinishReasons, want) {
		t.Errorf("tools: finish_reasons %v, want %v", tools.Quality.FinishReasons, want)
	}
	if want := []string{"tool_calls"}; !reflect.DeepEqual(strict.Quality.FinishReasons, want) || strict.Quality.ToolCall.Schema != nil {
		t.Errorf("tools-strict: finish_reasons %v, schema %v", strict.Quality.FinishReasons, strict.Quality.ToolCall.Schema)
	}
	if DefaultProbe.Quality.FinishReasons[len(DefaultProbe.Quality.FinishReasons)-1] == "tool_calls" {
		t.Errorf("the default finish_reasons were changed in place: %v", DefaultProbe.Quality.FinishReasons)
	}
	again, err := Parse([]byte(cfg.String()), filepath.Join(t.TempDir(), "again.yml"))
	if err != nil {
		t.Fatalf("Config.String does not reload: %v\n%s", err, cfg.String())
	}
	for i := range cfg.Probes {
		if fingerprint(again.Targets[0], again.Probes[i]) != fingerprint(cfg.Targets[0], cfg.Probes[i]) {
			t.Errorf("probe %s changed through Config.String", cfg.Probes[i].Name)
		}
	}
}

// TestReasoningToolsExample: deploy/examples/reasoning-tools.yml sets one
// probe per feature as its comments say.
func TestReasoningToolsExample(t *testing.T) {
	cfg, dir := loadExample(t, "reasoning-tools.yml")
	probe := func(name string) Probe {
		p, ok := cfg.Probe(name)
		if !ok {
			t.Fatalf("no probe %s", name)
		}
		return p
	}
	tools, prefix := probe("chat-tools"), probe("chat-prefix")
	tests := []struct {
		name      string
		got, want any
	}{
		{"slo.ttfa", time.Duration(probe("chat-reasoning").SLO.TTFA), 2 * time.Second},
		{"tool_call name", tools.Quality.ToolCall.Name, "get_weather"},
		{"arguments schema resolved", tools.Quality.ToolCall.ArgumentsSchema, filepath.Join(dir, "weather.schema.json")},
		{"arguments schema compiled", tools.Quality.ToolCall.Schema != nil, true},
		{"tool_calls accepted", tools.Quality.FinishReasons, []string{"stop", "length", "tool_calls"}},
		{"embedding_dim", probe("embeddings").Quality.EmbeddingDim, 384},
		{"fingerprint", *probe("canary").Fingerprint, Fingerprint{Tokens: 16, Confirm: 3}},
		{"prefix tokens", prefix.Workload.Random.PrefixTokens, 256},
		{"cache-busting", probe("chat-cache-busting").Workload.Random.PrefixTokens, 0},
	}
	for _, tc := range tests {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
