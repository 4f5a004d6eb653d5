package simulator

import (
	"slices"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// chatEvent is what the tests read from a chat chunk.
type chatEvent struct {
	Choices []struct {
		Delta struct {
			Role      *string `json:"role"`
			Content   *string `json:"content"`
			Reasoning *string `json:"reasoning"`
			ToolCalls []struct {
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Index    *int    `json:"index"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens        int `json:"completion_tokens"`
		CompletionTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

// chatStream is a decoded chat stream: its chunks (without [DONE]) and
// their raw JSON.
type chatStream struct {
	raw    []string
	chunks []chatEvent
}

func postChatStream(t *testing.T, url, body string) chatStream {
	t.Helper()
	resp, b := post(t, url+"/v1/chat/completions", body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var cs chatStream
	for _, ev := range events(t, b) {
		if ev == "[DONE]" {
			continue
		}
		var ce chatEvent
		decodeJSON(t, []byte(ev), &ce)
		cs.raw, cs.chunks = append(cs.raw, ev), append(cs.chunks, ce)
	}
	return cs
}

// texts joins the reasoning and content deltas and counts the events
// carrying reasoning.
func (cs chatStream) texts() (reasoning, content string, reasoningEvents int) {
	var r, c strings.Builder
	for _, ch := range cs.chunks {
		for _, x := range ch.Choices {
			if x.Delta.Reasoning != nil {
				r.WriteString(*x.Delta.Reasoning)
				reasoningEvents++
			}
			if x.Delta.Content != nil {
				c.WriteString(*x.Delta.Content)
			}
		}
	}
	return r.String(), c.String(), reasoningEvents
}

// usage returns the final usage chunk's completion and reasoning tokens
// (-1 when completion_tokens_details is absent).
func (cs chatStream) usage(t *testing.T) (int, int) {
	t.Helper()
	last := cs.chunks[len(cs.chunks)-1]
	if last.Usage == nil || len(last.Choices) != 0 {
		t.Fatalf("the last chunk is not the usage chunk: %s", cs.raw[len(cs.raw)-1])
	}
	if last.Usage.CompletionTokensDetails == nil {
		return last.Usage.CompletionTokens, -1
	}
	return last.Usage.CompletionTokens, last.Usage.CompletionTokensDetails.ReasoningTokens
}

const reasoningChat = `{"messages":[{"role":"user","content":"What is 12*12?"}],"stream":true,"stream_options":{"include_usage":true}%s}`

// TestReasoningStream checks vLLM's reasoning-parser wire shape: N
// reasoning deltas (delta.reasoning only) before the answer, and the usage
// counting them inside completion_tokens.
func TestReasoningStream(t *testing.T) {
	o := fastOptions()
	o.ReasoningTokens = 5
	s, url := startTest(t, o)
	cs := postChatStream(t, url, strings.Replace(reasoningChat, "%s", "", 1))
	var kinds []string
	for _, ev := range s.Trace()[0].Events {
		kinds = append(kinds, ev.Kind)
	}
	// The trace tells reasoning events from answer events (ground truth of
	// the time to the first answer token).
	if want := []string{"role", "reasoning", "reasoning", "reasoning", "reasoning", "reasoning", "content", "content", "finish", "usage", "done"}; !slices.Equal(kinds, want) {
		t.Errorf("trace kinds %v, want %v", kinds, want)
	}
	reasoning, content, n := cs.texts()
	if n != 5 || content != "144." {
		t.Errorf("%d reasoning events, content %q; want 5 and %q", n, content, "144.")
	}
	if words := strings.Fields(reasoning); len(words) != 5 {
		t.Errorf("reasoning %q: want 5 words", reasoning)
	}
	// The role chunk, then the reasoning deltas with no other key.
	for i, raw := range cs.raw[1:6] {
		if got := keyOrder(t, raw); !slices.Contains(got, "choices.delta.reasoning") || slices.Contains(got, "choices.delta.content") {
			t.Errorf("event %d keys %v: want a reasoning-only delta", i+1, got)
		}
	}
	if !strings.Contains(cs.raw[6], `"delta":{"content":"144"}`) {
		t.Errorf("first answer event %s", cs.raw[6])
	}
	completion, reasoningTokens := cs.usage(t)
	// 5 reasoning tokens, "144", "." and EOS.
	if completion != 8 || reasoningTokens != 5 {
		t.Errorf("usage completion %d reasoning %d, want 8 and 5", completion, reasoningTokens)
	}
	wantKeys := []string{"prompt_tokens", "total_tokens", "completion_tokens", "completion_tokens_details", "completion_tokens_details.reasoning_tokens"}
	var got []string
	for _, k := range keyOrder(t, cs.raw[len(cs.raw)-1]) {
		if u, ok := strings.CutPrefix(k, "usage."); ok {
			got = append(got, u)
		}
	}
	if !slices.Equal(got, wantKeys) {
		t.Errorf("usage keys %v, want %v", got, wantKeys)
	}

	t.Run("several tokens per event split at the boundary", func(t *testing.T) {
		o := o
		o.StreamInterval = 3
		_, url := startTest(t, o)
		cs3 := postChatStream(t, url, strings.Replace(reasoningChat, "%s", "", 1))
		r3, c3, _ := cs3.texts()
		if r3 != reasoning || c3 != content {
			t.Errorf("interval 3 gave reasoning %q content %q, want %q %q", r3, c3, reasoning, content)
		}
		mixed := slices.ContainsFunc(cs3.raw, func(raw string) bool {
			return strings.Contains(raw, `"content":"1`) && strings.Contains(raw, `"reasoning":`)
		})
		if !mixed {
			t.Errorf("no event carries the last reasoning and the first answer tokens: %v", cs3.raw)
		}
	})
	t.Run("max_tokens inside the reasoning", func(t *testing.T) {
		cs := postChatStream(t, url, strings.Replace(reasoningChat, "%s", `,"max_tokens":3`, 1))
		_, content, n := cs.texts()
		completion, reasoningTokens := cs.usage(t)
		finish := cs.chunks[len(cs.chunks)-2].Choices[0].FinishReason
		if n != 3 || content != "" || completion != 3 || reasoningTokens != 3 || finish == nil || *finish != "length" {
			t.Errorf("%d reasoning events, content %q, usage %d/%d, finish %v", n, content, completion, reasoningTokens, finish)
		}
	})
	t.Run("completions carry no reasoning", func(t *testing.T) {
		_, b := post(t, url+"/v1/completions", `{"prompt":"What is 12*12?","max_tokens":8}`)
		var r wire.CmplResponse
		decodeJSON(t, b, &r)
		if r.Choices[0].Text != "144." || r.Usage.CompletionTokens != 3 || r.Usage.CompletionTokensDetails != nil {
			t.Errorf("completion %s", b)
		}
	})
}

// TestReasoningResponse checks the non-streaming message and usage.
func TestReasoningResponse(t *testing.T) {
	o := fastOptions()
	o.ReasoningTokens = 4
	_, url := startTest(t, o)
	_, b := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"What is 12*12?"}]}`)
	var r wire.ChatResponse
	decodeJSON(t, b, &r)
	msg := r.Choices[0].Message
	if msg.Content != "144." || msg.Reasoning == nil || len(strings.Fields(*msg.Reasoning)) != 4 {
		t.Errorf("message %+v", msg)
	}
	if u := r.Usage; u.CompletionTokens != 7 || u.CompletionTokensDetails == nil || u.CompletionTokensDetails.ReasoningTokens != 4 {
		t.Errorf("usage %s", b)
	}
}

// TestReasoningServerMetrics checks that reasoning tokens are generated
// tokens for the server's metrics, as in vLLM: they count in the token
// counters and lengths, and the first of them is the first token.
func TestReasoningServerMetrics(t *testing.T) {
	o := fastOptions()
	o.ReasoningTokens = 6
	_, url := startTest(t, o)
	cs := postChatStream(t, url, strings.Replace(reasoningChat, "%s", "", 1))
	completion, _ := cs.usage(t)
	mfs := promtext.Scrape(t, url+"/metrics")
	if got := mfs["vllm:generation_tokens_total"].Metric[0].GetCounter().GetValue(); got != float64(completion) || completion != 9 {
		t.Errorf("generation tokens %g, usage %d; want both 9", got, completion)
	}
	if got := mfs["vllm:request_generation_tokens"].Metric[0].GetHistogram().GetSampleSum(); got != 9 {
		t.Errorf("request_generation_tokens sum %g, want 9", got)
	}
	// One ITL sample per token after the first: the reasoning gaps count.
	if got := mfs["vllm:inter_token_latency_seconds"].Metric[0].GetHistogram().GetSampleCount(); got != 8 {
		t.Errorf("ITL samples %d, want 8", got)
	}
}
