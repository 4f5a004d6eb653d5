package judge

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
)

func re(s string) config.Regexp {
	return config.Regexp{Regexp: regexp.MustCompile(s), Source: s}
}

// goodResult is a response that passes judgeProbe's contract.
func goodResult() *probe.Result {
	return &probe.Result{
		Model: "m", FinishReason: "stop", OutputTokens: 10, Text: `{"answer": 144}`,
		TTFT: 100 * time.Millisecond, TPOT: 10 * time.Millisecond, E2EL: time.Second,
	}
}

// writeSchema writes a JSON Schema document to a file and compiles it.
func writeSchema(t *testing.T, doc string) (string, *jsonschema.Schema) {
	t.Helper()
	path := testfile.Temp(t, "schema.json", doc)
	compiled, err := CompileSchema(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, compiled
}

func judgeProbe(t *testing.T) config.Probe {
	schema, compiled := writeSchema(t, `{"type":"object","required":["answer"],"properties":{"answer":{"type":"integer"}}}`)
	return config.Probe{
		SLO: config.SLO{TTFT: model.Duration(time.Second), TPOT: model.Duration(50 * time.Millisecond), E2EL: model.Duration(5 * time.Second)},
		Quality: config.Quality{
			Model: "m", FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1, MaxOutputTokens: 20,
			Regex: re(`answer`), JSON: true, JSONSchema: schema, Schema: compiled,
		},
	}
}

func TestJudge(t *testing.T) {
	p := judgeProbe(t)
	tests := []struct {
		name       string
		edit       func(r *probe.Result)
		expect     *config.Expect
		probe      func(p *config.Probe)
		want       probe.Disposition
		reason     string
		wantSLO    []string
		wantChecks []string
	}{
		{name: "accepted", want: probe.Accepted},
		{name: "wrong model", edit: func(r *probe.Result) { r.Model = "other" }, want: probe.QualityFailure, reason: probe.ReasonQuality, wantChecks: []string{probe.CheckModel}},
		{name: "finish reason", edit: func(r *probe.Result) { r.FinishReason = "abort" }, want: probe.QualityFailure, reason: probe.ReasonQuality, wantChecks: []string{probe.CheckFinishReason}},
		{name: "too few tokens", edit: func(r *probe.Result) { r.OutputTokens = 0 }, want: probe.QualityFailure, reason: probe.ReasonQuality, wantChecks: []string{probe.CheckMinOutputTokens}},
		{name: "too many tokens", edit: func(r *probe.Result) { r.OutputTokens = 21 }, want: probe.QualityFailure, reason: probe.ReasonQuality, wantChecks: []string{probe.CheckMaxOutputTokens}},
		{name: "regex json and schema", edit: func(r *probe.Result) { r.Text = "nope" }, want: probe.QualityFailure, reason: probe.ReasonQuality,
			wantChecks: []string{probe.CheckRegex, probe.CheckJSON, probe.CheckJSONSchema}},
		{name: "schema only", edit: func(r *probe.Result) { r.Text = `{"answer": "x"}` }, want: probe.QualityFailure, reason: probe.ReasonQuality, wantChecks: []string{probe.CheckJSONSchema}},
		{name: "expect regex", expect: &config.Expect{Regex: re(`\b145\b`)}, want: probe.QualityFailure, reason: probe.ReasonQuality, wantChecks: []string{probe.CheckExpect}},
		{name: "expect contains", expect: &config.Expect{Contains: "144"}, want: probe.Accepted},
		{name: "expect contains fails", expect: &config.Expect{Regex: re(`144`), Contains: "145"}, want: probe.QualityFailure, reason: probe.ReasonQuality, wantChecks: []string{probe.CheckExpect}},
		{name: "ttft slo", edit: func(r *probe.Result) { r.TTFT = 1001 * time.Millisecond }, want: probe.LatencyFailure, reason: probe.ReasonLatency, wantSLO: []string{probe.SLOTTFT}},
		{name: "slo at threshold is met", edit: func(r *probe.Result) { r.TTFT = time.Second }, want: probe.Accepted},
		{name: "every slo", edit: func(r *probe.Result) { r.TTFT, r.TPOT, r.E2EL = time.Hour, time.Hour, time.Hour }, want: probe.LatencyFailure, reason: probe.ReasonLatency,
			wantSLO: []string{probe.SLOTTFT, probe.SLOTPOT, probe.SLOE2EL}},
		{name: "zero threshold is no slo", probe: func(p *config.Probe) { p.SLO = config.SLO{} }, edit: func(r *probe.Result) { r.E2EL = time.Hour }, want: probe.Accepted},
		{name: "quality wins over latency", edit: func(r *probe.Result) { r.Model, r.E2EL = "x", time.Hour }, want: probe.QualityFailure, reason: probe.ReasonQuality,
			wantSLO: []string{probe.SLOE2EL}, wantChecks: []string{probe.CheckModel}},
		{name: "server failure kept, slo still listed, no quality checks",
			edit: func(r *probe.Result) {
				r.Disposition, r.Reason, r.Model, r.TTFT = probe.ServerFailure, probe.ReasonDisconnect, "", 2*time.Second
			},
			want: probe.ServerFailure, reason: probe.ReasonDisconnect, wantSLO: []string{probe.SLOTTFT}},
		{name: "client timeout kept", edit: func(r *probe.Result) { r.Disposition, r.Reason = probe.ClientTimeout, probe.ReasonTimeout }, want: probe.ClientTimeout, reason: probe.ReasonTimeout},
		{name: "cancelled kept", edit: func(r *probe.Result) { r.Disposition, r.Reason = probe.Cancelled, probe.ReasonShutdown }, want: probe.Cancelled, reason: probe.ReasonShutdown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pp := p
			if tc.probe != nil {
				tc.probe(&pp)
			}
			res := goodResult()
			if tc.edit != nil {
				tc.edit(res)
			}
			Request(pp, tc.expect, res)
			if res.Disposition != tc.want || res.Reason != tc.reason {
				t.Errorf("disposition = %s/%s, want %s/%s", res.Disposition, res.Reason, tc.want, tc.reason)
			}
			if !slices.Equal(res.SLOViolations, tc.wantSLO) {
				t.Errorf("SLO violations = %v, want %v", res.SLOViolations, tc.wantSLO)
			}
			if !slices.Equal(res.QualityFailures, tc.wantChecks) {
				t.Errorf("quality failures = %v, want %v", res.QualityFailures, tc.wantChecks)
			}
		})
	}
}

func TestJudgeTTFA(t *testing.T) {
	p := config.Probe{SLO: config.SLO{TTFA: model.Duration(time.Second)}}
	tests := []struct {
		name    string
		res     probe.Result
		want    probe.Disposition
		wantSLO []string
	}{
		{"answer within the objective", probe.Result{TTFT: ms(100), TTFA: ms(1000)}, probe.Accepted, nil},
		{"answer late", probe.Result{TTFT: ms(100), TTFA: ms(1001)}, probe.LatencyFailure, []string{probe.SLOTTFA}},
		{"reasoning only, finished early: the answer never came", probe.Result{TTFT: ms(100), E2EL: ms(300), ReasoningTokens: 5}, probe.LatencyFailure, []string{probe.SLOTTFA}},
		{"timeout without answer, censored", probe.Result{Disposition: probe.ClientTimeout, Reason: probe.ReasonTimeout, TTFT: ms(100), Elapsed: 2 * time.Second}, probe.ClientTimeout, []string{probe.SLOTTFA}},
		{"broken stream without answer: unmeasured", probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonDisconnect, TTFT: ms(100)}, probe.ServerFailure, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.res
			Request(p, nil, &res)
			if res.Disposition != tc.want || !slices.Equal(res.SLOViolations, tc.wantSLO) {
				t.Errorf("got %s %v, want %s %v", res.Disposition, res.SLOViolations, tc.want, tc.wantSLO)
			}
		})
	}
	res := probe.Result{TTFT: ms(100), E2EL: ms(300)}
	Request(config.Probe{}, nil, &res)
	if res.Disposition != probe.Accepted {
		t.Errorf("no ttfa objective: reasoning-only answer judged %s %v", res.Disposition, res.SLOViolations)
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestJudgeReasoningIgnored(t *testing.T) {
	p := judgeProbe(t)
	res := goodResult()
	res.Reasoning = `not json, no match`
	Request(p, &config.Expect{Contains: "144"}, res)
	if res.Disposition != probe.Accepted {
		t.Errorf("reasoning that breaks every check: %s %v", res.Disposition, res.QualityFailures)
	}
	res = goodResult()
	res.Text, res.Reasoning = "nope", goodResult().Text
	Request(p, nil, res)
	if want := []string{probe.CheckRegex, probe.CheckJSON, probe.CheckJSONSchema}; !slices.Equal(res.QualityFailures, want) {
		t.Errorf("reasoning that passes every check: %v, want %v", res.QualityFailures, want)
	}
}

func TestJudgeToolCall(t *testing.T) {
	schema, compiled := writeSchema(t, `{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`)
	withSchema := &config.ToolCallCheck{Name: "get_weather", ArgumentsSchema: schema, Schema: compiled}
	anyJSON := &config.ToolCallCheck{Name: "get_weather"}
	tests := []struct {
		name  string
		check *config.ToolCallCheck
		calls []probe.ToolCall
		ok    bool
	}{
		{"matching call", withSchema, []probe.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}, true},
		{"second call matches", withSchema, []probe.ToolCall{{Name: "get_time", Arguments: `{}`}, {Name: "get_weather", Arguments: `{"city":"Oslo"}`}}, true},
		{"arguments break the schema", withSchema, []probe.ToolCall{{Name: "get_weather", Arguments: `{"city":3}`}}, false},
		{"arguments not JSON", anyJSON, []probe.ToolCall{{Name: "get_weather", Arguments: `{"city":`}}, false},
		{"any JSON without schema", anyJSON, []probe.ToolCall{{Name: "get_weather", Arguments: `[]`}}, true},
		{"another function", withSchema, []probe.ToolCall{{Name: "get_time", Arguments: `{"city":"Paris"}`}}, false},
		{"no call", withSchema, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &probe.Result{FinishReason: "tool_calls", OutputTokens: 5, ToolCalls: tc.calls}
			Request(config.Probe{Quality: config.Quality{ToolCall: tc.check}}, nil, res)
			var want []string
			if !tc.ok {
				want = []string{probe.CheckToolCall}
			}
			if !slices.Equal(res.QualityFailures, want) {
				t.Errorf("quality failures = %v, want %v", res.QualityFailures, want)
			}
		})
	}
}

func TestJudgeBadSchemaFailsCheck(t *testing.T) {
	bad := testfile.Temp(t, "bad.json", `{"type": 12}`)
	res := goodResult()
	Request(config.Probe{Quality: config.Quality{JSONSchema: bad}}, nil, res)
	if !slices.Equal(res.QualityFailures, []string{probe.CheckJSONSchema}) {
		t.Fatalf("quality failures = %v", res.QualityFailures)
	}
}

func BenchmarkJudge(b *testing.B) {
	p := config.Probe{
		SLO:     config.SLO{TTFT: model.Duration(time.Second), TPOT: model.Duration(50 * time.Millisecond)},
		Quality: config.Quality{Model: "m", FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1, Regex: re(`\d+`)},
	}
	b.ReportAllocs()
	for b.Loop() {
		res := goodResult()
		Request(p, nil, res)
		if res.Disposition != probe.Accepted {
			b.Fatal(res.Disposition)
		}
	}
}
