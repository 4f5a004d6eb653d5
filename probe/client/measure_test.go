package client

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/stream"
)

// timedEvent is one event's JSON and its arrival, in ms after t0.
type timedEvent struct {
	ms   int
	data string
}

const (
	roleChunk  = `{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	usageFinal = `{"model":"m","choices":[],"usage":{"prompt_tokens":17,"total_tokens":21,"completion_tokens":4}}`
)

func measureEvents(t *testing.T, events []timedEvent, complete bool) *probe.Result {
	t.Helper()
	t0 := time.Unix(5000, 0)
	m := &measurement{start: t0, headers: t0.Add(10 * time.Millisecond)}
	var c stream.Chunk
	for _, e := range events {
		if err := c.Decode([]byte(e.data)); err != nil {
			t.Fatalf("decode %s: %v", e.data, err)
		}
		if err := m.observe(&c, t0.Add(time.Duration(e.ms)*time.Millisecond)); err != nil {
			t.Fatalf("observe %s: %v", e.data, err)
		}
	}
	res := &probe.Result{}
	m.fill(res, complete, 99)
	return res
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestMeasurement(t *testing.T) {
	tests := []struct {
		name     string
		events   []timedEvent
		complete bool
		want     probe.Result
	}{{
		name: "chat role chunk does not count, usage gives tokens",
		events: []timedEvent{
			{100, roleChunk},
			{101, `{"model":"m","choices":[{"delta":{"content":"Hel"}}]}`},
			{130, `{"model":"m","choices":[{"delta":{"content":"lo"}}]}`},
			{170, `{"model":"m","choices":[{"delta":{"content":" you"},"finish_reason":"length"}]}`},
			{175, usageFinal},
		},
		complete: true,
		want: probe.Result{
			TTFT: ms(101), TTFA: ms(101), E2EL: ms(170), TPOT: ms(69) / 3, Chunks: 3, PromptTokens: 17, OutputTokens: 4,
			UsageFromServer: true, FinishReason: "length", Model: "m", Text: "Hello you",
			ITLs: []time.Duration{ms(29), ms(40)}, ITLTokens: []int{0, 0},
			Phases: probe.PhaseTimes{probe.PhaseFirstToken: ms(91), probe.PhaseDecode: ms(69)},
		},
	}, {
		name: "continuous usage: tokens per chunk and empty-text EOS chunk counts",
		events: []timedEvent{
			{50, `{"model":"m","choices":[{"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":17,"completion_tokens":0}}`},
			{60, `{"model":"m","choices":[{"delta":{"content":"a b"}}],"usage":{"prompt_tokens":17,"completion_tokens":2}}`},
			{80, `{"model":"m","choices":[{"delta":{"reasoning":"c"}}],"usage":{"prompt_tokens":17,"completion_tokens":3}}`},
			{90, `{"model":"m","choices":[{"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":17,"completion_tokens":4}}`},
			{91, usageFinal},
		},
		complete: true,
		want: probe.Result{
			TTFT: ms(60), TTFA: ms(60), E2EL: ms(90), TPOT: ms(10), Chunks: 3, PromptTokens: 17, OutputTokens: 4,
			UsageFromServer: true, FinishReason: "stop", Model: "m", Text: "a b", Reasoning: "c",
			ReasoningTokens: 1, ReasoningEvents: 1,
			ITLs: []time.Duration{ms(20), ms(10)}, ITLTokens: []int{1, 1},
			Phases: probe.PhaseTimes{probe.PhaseFirstToken: ms(50), probe.PhaseDecode: ms(30)},
		},
	}, {
		name: "completions without usage: estimated and flagged",
		events: []timedEvent{
			{40, `{"model":"m","choices":[{"text":" x","finish_reason":null}],"usage":null}`},
			{60, `{"model":"m","choices":[{"text":" y","finish_reason":"length"}],"usage":null}`},
		},
		complete: true,
		want: probe.Result{
			TTFT: ms(40), TTFA: ms(40), E2EL: ms(60), TPOT: ms(20), Chunks: 2, PromptTokens: 99, OutputTokens: 2,
			FinishReason: "length", Model: "m", Text: " x y", Flags: []string{flagNoUsage},
			ITLs: []time.Duration{ms(20)}, ITLTokens: []int{0},
			Phases: probe.PhaseTimes{probe.PhaseFirstToken: ms(30), probe.PhaseDecode: ms(20)},
		},
	}, {
		name: "one token: no TPOT; server metrics recorded",
		events: []timedEvent{
			{40, `{"model":"m","choices":[{"text":"!","finish_reason":"length"}]}`},
			{41, `{"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1},"metrics":{"queue_time_ms":1.5,"time_to_first_token_ms":20,"mean_itl_ms":null}}`},
		},
		complete: true,
		want: probe.Result{
			TTFT: ms(40), TTFA: ms(40), E2EL: ms(40), Chunks: 1, PromptTokens: 3, OutputTokens: 1, UsageFromServer: true,
			FinishReason: "length", Model: "m", Text: "!", Server: &probe.ServerTiming{QueueTime: 1500 * time.Microsecond, TTFT: ms(20)},
			Phases: probe.PhaseTimes{probe.PhaseFirstToken: ms(30), probe.PhaseDecode: 0},
		},
	}, {
		name: "tool call deltas carry tokens, empty tool_calls lists do not",
		events: []timedEvent{
			{20, `{"model":"m","choices":[{"delta":{"role":"assistant","content":"","tool_calls":[]}}]}`},
			{30, `{"model":"m","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":""}}]}}]}`},
			{45, `{"model":"m","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`},
			{46, `{"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":6}}`},
		},
		complete: true,
		want: probe.Result{
			TTFT: ms(30), TTFA: ms(30), E2EL: ms(45), TPOT: ms(3), Chunks: 2, PromptTokens: 9, OutputTokens: 6, UsageFromServer: true,
			FinishReason: "tool_calls", Model: "m", ToolCalls: []probe.ToolCall{{Name: "f", Arguments: "{}"}}, ITLs: []time.Duration{ms(15)}, ITLTokens: []int{0},
			Phases: probe.PhaseTimes{probe.PhaseFirstToken: ms(20), probe.PhaseDecode: ms(15)},
		},
	}, {
		name: "reasoning first: TTFT at the first reasoning event, TTFA at the first content, usage details count",
		events: []timedEvent{
			{50, `{"model":"m","choices":[{"delta":{"role":"assistant","content":""}}]}`},
			{60, `{"model":"m","choices":[{"delta":{"reasoning":"Let me"}}]}`},
			{70, `{"model":"m","choices":[{"delta":{"reasoning":" think."}}]}`},
			{80, `{"model":"m","choices":[{"delta":{"reasoning":" 144"}}]}`},
			{95, `{"model":"m","choices":[{"delta":{"content":"144"},"finish_reason":"stop"}]}`},
			{96, `{"model":"m","choices":[],"usage":{"prompt_tokens":17,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":3}}}`},
		},
		complete: true,
		want: probe.Result{
			TTFT: ms(60), TTFA: ms(95), E2EL: ms(95), TPOT: ms(35) / 3, Chunks: 4, PromptTokens: 17, OutputTokens: 4,
			UsageFromServer: true, FinishReason: "stop", Model: "m", Text: "144", Reasoning: "Let me think. 144",
			ReasoningTokens: 3, ReasoningEvents: 3,
			ITLs: []time.Duration{ms(10), ms(10), ms(15)}, ITLTokens: []int{0, 0, 0},
			Phases: probe.PhaseTimes{probe.PhaseFirstToken: ms(50), probe.PhaseDecode: ms(35)},
		},
	}, {
		name: "reasoning only, cut short: TTFT but no TTFA, reasoning_content read, events counted",
		events: []timedEvent{
			{60, `{"model":"m","choices":[{"delta":{"reasoning_content":"a"}}]}`},
			{70, `{"model":"m","choices":[{"delta":{"reasoning_content":"b"}}]}`},
		},
		complete: false,
		want: probe.Result{
			TTFT: ms(60), Chunks: 2, PromptTokens: 99, OutputTokens: 2, Model: "m", Reasoning: "ab",
			ReasoningTokens: 2, ReasoningEvents: 2, ITLs: []time.Duration{ms(10)}, ITLTokens: []int{0},
			Phases: probe.PhaseTimes{probe.PhaseFirstToken: ms(50)},
		},
	}, {
		name: "two tool calls, fragments interleaved, assembled per index",
		events: []timedEvent{
			{40, `{"model":"m","choices":[{"delta":{"reasoning":"call both"}}]}`},
			{50, `{"model":"m","choices":[{"delta":{"tool_calls":[{"index":1,"id":"call-b","type":"function","function":{"name":"g","arguments":""}}]}}]}`},
			{55, `{"model":"m","choices":[{"delta":{"tool_calls":[{"index":0,"id":"call-a","type":"function","function":{"name":"f","arguments":"{\"x\""}}]}}]}`},
			{60, `{"model":"m","choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"[]"}},{"index":0,"id":null,"function":{"name":null,"arguments":":1}"}}]}}]}`},
			{61, `{"model":"m","choices":[{"delta":{},"finish_reason":"tool_calls"}]}`},
		},
		complete: true,
		want: probe.Result{
			TTFT: ms(40), TTFA: ms(50), E2EL: ms(60), TPOT: ms(20) / 3, Chunks: 4, PromptTokens: 99, OutputTokens: 4,
			FinishReason: "tool_calls", Model: "m", Reasoning: "call both", ReasoningTokens: 1, ReasoningEvents: 1,
			ToolCalls: []probe.ToolCall{{ID: "call-a", Name: "f", Arguments: `{"x":1}`}, {ID: "call-b", Name: "g", Arguments: "[]"}},
			Flags:     []string{flagNoUsage}, ITLs: []time.Duration{ms(10), ms(5), ms(5)}, ITLTokens: []int{0, 0, 0},
			Phases: probe.PhaseTimes{probe.PhaseFirstToken: ms(30), probe.PhaseDecode: ms(20)},
		},
	}, {
		name:     "broken stream: no tokens, no flag",
		events:   []timedEvent{{100, roleChunk}},
		complete: false,
		want:     probe.Result{Model: "m", PromptTokens: 99},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := measureEvents(t, tc.events, tc.complete)
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestMeasurementMalformedToolCalls(t *testing.T) {
	for _, data := range []string{
		`{"model":"m","choices":[{"delta":{"tool_calls":{"index":0}}}]}`,
		`{"model":"m","choices":[{"delta":{"tool_calls":[{"index":"0"}]}}]}`,
	} {
		var c stream.Chunk
		if err := c.Decode([]byte(data)); err != nil {
			t.Fatal(err)
		}
		m := &measurement{start: time.Unix(0, 0)}
		if err := m.observe(&c, time.Unix(1, 0)); err == nil {
			t.Errorf("observe(%s): no error", data)
		}
	}
}

func TestMeasurementITLMax(t *testing.T) {
	res := measureEvents(t, []timedEvent{
		{10, `{"choices":[{"text":"a"}]}`}, {15, `{"choices":[{"text":"b"}]}`},
		{45, `{"choices":[{"text":"c"}]}`}, {50, `{"choices":[{"text":"d"}]}`},
	}, true)
	if got := res.ITLMax(); got != ms(30) {
		t.Fatalf("ITLMax = %v, want 30ms", got)
	}
	if !slices.Equal(res.ITLs, []time.Duration{ms(5), ms(30), ms(5)}) {
		t.Fatalf("ITLs = %v", res.ITLs)
	}
}

// TestServerTiming: a time vLLM's metrics object leaves out is absent,
// not zero: a queue time of 0 is a request scheduled at once.
func TestServerTiming(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name       string
		m          *stream.Metrics
		queue, fst time.Duration
		none       bool
	}{
		{"both", &stream.Metrics{QueueTimeMS: ms(0), TTFTMS: ms(12.5)}, 0, 12500 * time.Microsecond, false},
		{"ttft only", &stream.Metrics{TTFTMS: ms(40)}, -1, 40 * time.Millisecond, false},
		{"queue only", &stream.Metrics{QueueTimeMS: ms(3)}, 3 * time.Millisecond, 0, false},
		{"neither", &stream.Metrics{}, 0, 0, true},
		{"no object", nil, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := serverTiming(tc.m)
			if tc.none {
				if st != nil {
					t.Fatalf("got %+v, want none", st)
				}
				return
			}
			if st == nil || (st.QueueTime < 0) != (tc.queue < 0) || (tc.queue >= 0 && st.QueueTime != tc.queue) || st.TTFT != tc.fst {
				t.Errorf("got %+v, want queue %v ttft %v", st, tc.queue, tc.fst)
			}
		})
	}
}
