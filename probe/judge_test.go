package probe

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
)

func re(s string) config.Regexp {
	return config.Regexp{Regexp: regexp.MustCompile(s), Source: s}
}

// goodResult is a response that passes judgeProbe's contract.
func goodResult() *Result {
	return &Result{
		Model: "m", FinishReason: "stop", OutputTokens: 10, Text: `{"answer": 144}`,
		TTFT: 100 * time.Millisecond, TPOT: 10 * time.Millisecond, E2EL: time.Second,
	}
}

func judgeProbe(t *testing.T) config.Probe {
	schema := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","required":["answer"],"properties":{"answer":{"type":"integer"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	compiled, err := CompileSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
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
		edit       func(r *Result)
		expect     *config.Expect
		probe      func(p *config.Probe)
		want       Disposition
		reason     string
		wantSLO    []string
		wantChecks []string
	}{
		{name: "accepted", want: Accepted},
		{name: "wrong model", edit: func(r *Result) { r.Model = "other" }, want: QualityFailure, reason: ReasonQuality, wantChecks: []string{CheckModel}},
		{name: "finish reason", edit: func(r *Result) { r.FinishReason = "abort" }, want: QualityFailure, reason: ReasonQuality, wantChecks: []string{CheckFinishReason}},
		{name: "too few tokens", edit: func(r *Result) { r.OutputTokens = 0 }, want: QualityFailure, reason: ReasonQuality, wantChecks: []string{CheckMinOutputTokens}},
		{name: "too many tokens", edit: func(r *Result) { r.OutputTokens = 21 }, want: QualityFailure, reason: ReasonQuality, wantChecks: []string{CheckMaxOutputTokens}},
		{name: "regex json and schema", edit: func(r *Result) { r.Text = "nope" }, want: QualityFailure, reason: ReasonQuality,
			wantChecks: []string{CheckRegex, CheckJSON, CheckJSONSchema}},
		{name: "schema only", edit: func(r *Result) { r.Text = `{"answer": "x"}` }, want: QualityFailure, reason: ReasonQuality, wantChecks: []string{CheckJSONSchema}},
		{name: "expect regex", expect: &config.Expect{Regex: re(`\b145\b`)}, want: QualityFailure, reason: ReasonQuality, wantChecks: []string{CheckExpect}},
		{name: "expect contains", expect: &config.Expect{Contains: "144"}, want: Accepted},
		{name: "expect contains fails", expect: &config.Expect{Regex: re(`144`), Contains: "145"}, want: QualityFailure, reason: ReasonQuality, wantChecks: []string{CheckExpect}},
		{name: "ttft slo", edit: func(r *Result) { r.TTFT = 1001 * time.Millisecond }, want: LatencyFailure, reason: ReasonLatency, wantSLO: []string{SLOTTFT}},
		{name: "slo at threshold is met", edit: func(r *Result) { r.TTFT = time.Second }, want: Accepted},
		{name: "every slo", edit: func(r *Result) { r.TTFT, r.TPOT, r.E2EL = time.Hour, time.Hour, time.Hour }, want: LatencyFailure, reason: ReasonLatency,
			wantSLO: []string{SLOTTFT, SLOTPOT, SLOE2EL}},
		{name: "zero threshold is no slo", probe: func(p *config.Probe) { p.SLO = config.SLO{} }, edit: func(r *Result) { r.E2EL = time.Hour }, want: Accepted},
		{name: "quality wins over latency", edit: func(r *Result) { r.Model, r.E2EL = "x", time.Hour }, want: QualityFailure, reason: ReasonQuality,
			wantSLO: []string{SLOE2EL}, wantChecks: []string{CheckModel}},
		{name: "server failure kept, slo still listed, no quality checks",
			edit: func(r *Result) {
				r.Disposition, r.Reason, r.Model, r.TTFT = ServerFailure, ReasonDisconnect, "", 2*time.Second
			},
			want: ServerFailure, reason: ReasonDisconnect, wantSLO: []string{SLOTTFT}},
		{name: "client timeout kept", edit: func(r *Result) { r.Disposition, r.Reason = ClientTimeout, ReasonTimeout }, want: ClientTimeout, reason: ReasonTimeout},
		{name: "cancelled kept", edit: func(r *Result) { r.Disposition, r.Reason = Cancelled, ReasonShutdown }, want: Cancelled, reason: ReasonShutdown},
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
			Judge(pp, tc.expect, res)
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

func TestJudgeBadSchemaFailsCheck(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"type": 12}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res := goodResult()
	Judge(config.Probe{Quality: config.Quality{JSONSchema: bad}}, nil, res)
	if !slices.Equal(res.QualityFailures, []string{CheckJSONSchema}) {
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
		Judge(p, nil, res)
		if res.Disposition != Accepted {
			b.Fatal(res.Disposition)
		}
	}
}
