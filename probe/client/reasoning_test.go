package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testclock"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
)

// reasoningChat is a vLLM-shaped chat stream of a reasoning model: role
// chunk, three reasoning deltas, the answer in two content deltas, the
// finish chunk and the usage chunk with reasoning_tokens.
var reasoningChat = []string{
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":5,"completion_tokens":0}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"reasoning":"12*12 is"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":6,"completion_tokens":1}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"reasoning":" 145? no,"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"reasoning":" {not json"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":8,"completion_tokens":3}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"14"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"4"},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":10,"completion_tokens":5}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":10,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":3}}}`,
}

// TestRequesterReasoningExactTiming runs a reasoning stream through the
// whole requester with an injected clock: TTFT is the first reasoning
// event, TTFA the first content event, and the TTFA objective is judged.
func TestRequesterReasoningExactTiming(t *testing.T) {
	clock := testclock.New(time.Unix(9000, 0))
	tr := &scriptedTransport{clock: clock, t0: clock.Now(), headersMS: 20, pieces: []scriptedPiece{
		{ms: 100, data: sse(reasoningChat[0])},
		{ms: 110, data: sse(reasoningChat[1])},
		{ms: 150, data: sse(reasoningChat[2])},
		{ms: 190, data: sse(reasoningChat[3])},
		{ms: 400, data: sse(reasoningChat[4])},
		{ms: 420, data: sse(reasoningChat[5:]...) + "data: [DONE]\n\n"},
	}}
	p := rqProbe(config.APIChat)
	p.SLO = config.SLO{TTFT: model.Duration(300 * time.Millisecond), TTFA: model.Duration(300 * time.Millisecond)}
	r := newTestRequester(t, rqTarget("http://127.0.0.1:1"), p, Options{Now: clock.Now})
	r.client.Transport = tr
	res := &probe.Result{Seq: 1, Scheduled: clock.Now()}
	r.Do(context.Background(), res)

	checkAll(t, []check{
		{"disposition", res.Disposition, probe.LatencyFailure},
		{"slo", fmt.Sprint(res.SLOViolations), fmt.Sprint([]string{probe.SLOTTFA})},
		{"ttft", res.TTFT, ms(110)},
		{"ttfa", res.TTFA, ms(400)},
		{"e2el", res.E2EL, ms(420)},
		{"reasoning tokens (server's)", res.ReasoningTokens, 3},
		{"reasoning events", res.ReasoningEvents, 3},
		{"output tokens", res.OutputTokens, 5},
		{"text", res.Text, "144"},
		{"reasoning", res.Reasoning, "12*12 is 145? no, {not json"},
	})
}

// TestRequesterReasoningRealTiming checks TTFA against a server that writes
// each event a known time after the previous one: TTFT comes one gap after
// the role chunk, TTFA three reasoning gaps later.
func TestRequesterReasoningRealTiming(t *testing.T) {
	const (
		gap   = 50 * time.Millisecond
		slack = 250 * time.Millisecond // generous: the test machine is shared
	)
	url := pausedStream(t, evenly(gap, reasoningChat), nil)
	r := newTestRequester(t, rqTarget(url), rqProbe(config.APIChat), Options{})
	res := doRequest(context.Background(), r, 1)
	if res.Disposition != probe.Accepted {
		t.Fatalf("got %s/%s %s %v", res.Disposition, res.Reason, res.Error, res.QualityFailures)
	}
	within := slackCheck(t, slack)
	within("ttft", res.TTFT, gap)
	within("ttfa", res.TTFA, 4*gap)
	within("ttfa - ttft", res.TTFA-res.TTFT, 3*gap-10*time.Millisecond)
	if res.ReasoningTokens != 3 {
		t.Errorf("reasoning tokens = %d, want 3", res.ReasoningTokens)
	}
}

// TestRequesterChecksJudgeAnswer: a check the reasoning would pass or fail
// judges the answer only.
func TestRequesterChecksJudgeAnswer(t *testing.T) {
	url := pausedStream(t, evenly(0, reasoningChat), nil)
	tests := []struct {
		name    string
		quality func(q *config.Quality)
		expect  *config.Expect
		want    []string
	}{
		{"regex only the reasoning matches fails", func(q *config.Quality) { q.Regex = mustRegexp(t, `145`) }, nil, []string{probe.CheckRegex}},
		{"regex the answer matches passes though the reasoning does not", func(q *config.Quality) { q.Regex = mustRegexp(t, `^144$`) }, nil, nil},
		{"json answer passes though the reasoning is not JSON", func(q *config.Quality) { q.JSON = true }, nil, nil},
		{"expect contains only in the reasoning fails", nil, &config.Expect{Contains: "no,"}, []string{probe.CheckExpect}},
		{"expect regex on the answer passes", nil, &config.Expect{Regex: mustRegexp(t, `\b144\b`)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := rqProbe(config.APIChat)
			if tc.quality != nil {
				tc.quality(&p.Quality)
			}
			if tc.expect != nil {
				p.Workload.Prompts[0].Expect = *tc.expect
			}
			r := newTestRequester(t, rqTarget(url), p, Options{})
			res := doRequest(context.Background(), r, 1)
			if !slices.Equal(res.QualityFailures, tc.want) {
				t.Errorf("quality failures = %v, want %v (%s %s)", res.QualityFailures, tc.want, res.Disposition, res.Error)
			}
		})
	}
}

// toolCallChat streams a call of get_weather in fragments, vLLM-style:
// the first fragment names the function and id, later ones carry
// arguments; %s is the second half of the arguments.
const toolCallChat = `{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[]},"finish_reason":null}]}
{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]},"finish_reason":null}]}
{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"%s"}}]},"finish_reason":null}]}
{"model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":"tool_calls","stop_reason":null}]}
{"model":"m","choices":[],"usage":{"prompt_tokens":50,"total_tokens":62,"completion_tokens":12}}`

// TestRequesterToolCall sends tools through request.extra and judges the
// assembled call against quality.tool_call's schema.
func TestRequesterToolCall(t *testing.T) {
	schema := testfile.Temp(t, "args.json", `{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object"}}}}
	tests := []struct {
		name     string
		rest     string // the second half of the arguments
		check    config.ToolCallCheck
		want     []string
		wantDisp probe.Disposition
	}{
		{"valid call", `\"Paris\"}`, config.ToolCallCheck{Name: "get_weather", ArgumentsSchema: schema}, nil, probe.Accepted},
		{"arguments not matching the schema", `42}`, config.ToolCallCheck{Name: "get_weather", ArgumentsSchema: schema}, []string{probe.CheckToolCall}, probe.QualityFailure},
		{"arguments not JSON", `\"Par`, config.ToolCallCheck{Name: "get_weather"}, []string{probe.CheckToolCall}, probe.QualityFailure},
		{"another function", `\"Paris\"}`, config.ToolCallCheck{Name: "get_time"}, []string{probe.CheckToolCall}, probe.QualityFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			events := strings.Split(fmt.Sprintf(toolCallChat, tc.rest), "\n")
			url := pausedStream(t, evenly(0, events), func(body map[string]any) { got = body })
			p := rqProbe(config.APIChat)
			p.Request.Extra = map[string]any{"tools": tools, "tool_choice": "required"}
			p.Quality.FinishReasons = []string{"tool_calls"}
			p.Quality.ToolCall = &tc.check
			r := newTestRequester(t, rqTarget(url), p, Options{})
			res := doRequest(context.Background(), r, 1)
			if res.Disposition != tc.wantDisp || !slices.Equal(res.QualityFailures, tc.want) {
				t.Errorf("got %s %v (%s), want %s %v", res.Disposition, res.QualityFailures, res.Error, tc.wantDisp, tc.want)
			}
			if len(res.ToolCalls) != 1 || res.ToolCalls[0].ID != "chatcmpl-tool-1" || res.ToolCalls[0].Name != "get_weather" {
				t.Errorf("tool calls = %+v", res.ToolCalls)
			}
			if got["tool_choice"] != "required" || fmt.Sprint(got["tools"]) != fmt.Sprint(tools) {
				t.Errorf("request body tools/tool_choice = %v / %v, want them passed through", got["tools"], got["tool_choice"])
			}
		})
	}
}
