// Package judge turns one measured request into its disposition: SLO
// violations, quality checks (model, finish reason, output tokens, regex,
// JSON, JSON schema, embedding length, per-prompt expectations, tool
// calls) and the order in which they decide (docs/design.md,
// "Dispositions and accounting").
package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Request judges one request: it sets res's Disposition, Reason,
// SLOViolations and QualityFailures from its measured fields, in the order
// of docs/design.md, "Dispositions and accounting". A
// server_failure, client_timeout or cancelled disposition already set by
// the requester is kept; SLO violations are still listed for what was
// measured. Quality checks run only on responses that completed, since a
// broken stream says nothing about the model's answer, and judge the answer
// (Result.Text, Result.ToolCalls), never the reasoning. Every failing check
// and SLO is listed even when another disposition wins.
//
// expect holds the per-prompt checks (nil for none). The model check
// compares every event's model with p.Quality.Model (the requester fills it
// from the target's model when the probe does not name one) and fails a
// response whose events name different models.
func Request(p config.Probe, expect *config.Expect, res *probe.Result) {
	res.SLOViolations = sloViolations(p.SLO, res)
	completed := res.Disposition == ""
	if completed {
		res.QualityFailures = qualityFailures(p.Quality, expect, res)
	}
	if !completed {
		return
	}
	switch {
	case len(res.QualityFailures) > 0:
		res.Disposition, res.Reason = probe.QualityFailure, probe.ReasonQuality
	case len(res.SLOViolations) > 0:
		res.Disposition, res.Reason = probe.LatencyFailure, probe.ReasonLatency
	default:
		res.Disposition, res.Reason = probe.Accepted, ""
	}
}

// sloViolations lists the SLOs whose measured value exceeds its threshold;
// a zero threshold or an unmeasured value is no violation. A client_timeout
// is judged at its censored TTFT, TTFA and E2EL (Result.ObservedTTFT). A
// stream that ended without any answer (reasoning only) violates a TTFA
// objective: its answer never came within it.
func sloViolations(s config.SLO, res *probe.Result) []string {
	var out []string
	check := func(name string, limit, got time.Duration) {
		if limit > 0 && got > limit {
			out = append(out, name)
		}
	}
	ttft, _ := res.ObservedTTFT()
	e2el, _ := res.ObservedE2EL()
	check(probe.SLOTTFT, time.Duration(s.TTFT), ttft)
	check(probe.SLOTPOT, time.Duration(s.TPOT), res.TPOT)
	check(probe.SLOE2EL, time.Duration(s.E2EL), e2el)
	if ttfa, ok := res.ObservedTTFA(); ok {
		check(probe.SLOTTFA, time.Duration(s.TTFA), ttfa)
	} else if s.TTFA > 0 && res.Disposition == "" {
		out = append(out, probe.SLOTTFA)
	}
	return out
}

// qualityFailures lists the checks the response fails.
func qualityFailures(q config.Quality, expect *config.Expect, res *probe.Result) []string {
	var out []string
	if (q.Model != "" && res.Model != q.Model) || res.OtherModel != "" {
		out = append(out, probe.CheckModel)
	}
	if len(q.FinishReasons) > 0 && !slices.Contains(q.FinishReasons, res.FinishReason) {
		out = append(out, probe.CheckFinishReason)
	}
	if q.MinOutputTokens > 0 && res.OutputTokens < q.MinOutputTokens {
		out = append(out, probe.CheckMinOutputTokens)
	}
	if q.MaxOutputTokens > 0 && res.OutputTokens > q.MaxOutputTokens {
		out = append(out, probe.CheckMaxOutputTokens)
	}
	if q.Regex.Regexp != nil && !q.Regex.MatchString(res.Text) {
		out = append(out, probe.CheckRegex)
	}
	if q.JSON && !json.Valid([]byte(res.Text)) {
		out = append(out, probe.CheckJSON)
	}
	if q.JSONSchema != "" && !matchesSchema(q.Schema, res.Text) {
		out = append(out, probe.CheckJSONSchema)
	}
	if q.EmbeddingDim > 0 && (res.EmbeddingDim != q.EmbeddingDim || res.EmbeddingNotFinite > 0) {
		out = append(out, probe.CheckEmbeddingDim)
	}
	if expect != nil && !expectMatches(expect, res.Text) {
		out = append(out, probe.CheckExpect)
	}
	if q.ToolCall != nil && !toolCalled(q.ToolCall, res.ToolCalls) {
		out = append(out, probe.CheckToolCall)
	}
	return out
}

// toolCalled reports whether one of calls is a call of c.Name whose
// arguments are JSON satisfying c's schema (any JSON when it has none).
func toolCalled(c *config.ToolCallCheck, calls []probe.ToolCall) bool {
	for _, tc := range calls {
		if tc.Name != c.Name {
			continue
		}
		if c.ArgumentsSchema == "" && json.Valid([]byte(tc.Arguments)) {
			return true
		}
		if c.ArgumentsSchema != "" && matchesSchema(c.Schema, tc.Arguments) {
			return true
		}
	}
	return false
}

func expectMatches(e *config.Expect, text string) bool {
	if e.Regex.Regexp != nil && !e.Regex.MatchString(text) {
		return false
	}
	return e.Contains == "" || strings.Contains(text, e.Contains)
}

// CompileSchema compiles the JSON schema file at path, for a Probe built
// in code (a loaded config carries its compiled Quality.Schema).
func CompileSchema(path string) (*jsonschema.Schema, error) {
	s, err := config.NewSchemaCompiler().Compile(path)
	if err != nil {
		return nil, fmt.Errorf("compile json schema %s: %w", path, err)
	}
	return s, nil
}

// matchesSchema reports whether text is JSON that satisfies s. A missing
// schema (one that did not compile) fails every response.
func matchesSchema(s *jsonschema.Schema, text string) bool {
	if s == nil {
		return false
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
	if err != nil {
		return false
	}
	return s.Validate(doc) == nil
}
