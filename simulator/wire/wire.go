// Package wire holds the JSON shapes of vLLM's OpenAI-compatible
// responses, chunks and errors, and encodes them the way vLLM does
// (pydantic's Compact JSON, Python's json.dumps for in-stream errors).
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// JSON shapes of vLLM's responses. Field order is vLLM's (pydantic dumps
// fields in declaration order); json.RawMessage fields with omitempty are
// keys that are present (as null) only on some chunks.

// Null is a JSON null, for keys vLLM always writes.
var Null = json.RawMessage("null")

type UsageStream struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

type UsageFull struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	PromptTokensDetails     json.RawMessage          `json:"prompt_tokens_details"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// CompletionTokensDetails is vLLM's CompletionTokenUsageInfo, reported by
// servers with a reasoning parser; the reasoning tokens are part of
// completion_tokens.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// PerRequestMetrics is vLLM's PerRequestTimingMetrics (milliseconds).
type PerRequestMetrics struct {
	TimeToFirstTokenMs *float64 `json:"time_to_first_token_ms"`
	QueueTimeMs        *float64 `json:"queue_time_ms"`
	GenerationTimeMs   *float64 `json:"generation_time_ms"`
	MeanITLMs          *float64 `json:"mean_itl_ms"`
	TokensPerSecond    *float64 `json:"tokens_per_second"`
}

// Head holds the keys that open every response and chunk.
type Head struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
}

type CmplChunk struct {
	Head
	Choices           []CmplChunkChoice  `json:"choices"`
	Usage             *UsageStream       `json:"usage,omitempty"`
	SystemFingerprint string             `json:"system_fingerprint,omitempty"`
	Metrics           *PerRequestMetrics `json:"metrics,omitempty"`
}

type CmplChunkChoice struct {
	Index          int             `json:"index"`
	Text           string          `json:"text"`
	Logprobs       json.RawMessage `json:"logprobs"`
	FinishReason   *string         `json:"finish_reason"`
	StopReason     json.RawMessage `json:"stop_reason"`
	PromptTokenIDs json.RawMessage `json:"prompt_token_ids"`
	TokenIDs       json.RawMessage `json:"token_ids"`
}

type ChatChunk struct {
	Head
	Choices           []ChatChunkChoice  `json:"choices"`
	Usage             *UsageStream       `json:"usage,omitempty"`
	PromptTokenIDs    json.RawMessage    `json:"prompt_token_ids,omitempty"`
	PromptText        json.RawMessage    `json:"prompt_text,omitempty"`
	SystemFingerprint string             `json:"system_fingerprint,omitempty"`
	Metrics           *PerRequestMetrics `json:"metrics,omitempty"`
}

type ChatDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	Reasoning *string         `json:"reasoning,omitempty"`
	ToolCalls []DeltaToolCall `json:"tool_calls,omitempty"`
}

// DeltaToolCall is one streamed piece of a tool call: the first carries
// the id, type and function name, later ones only argument text.
type DeltaToolCall struct {
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Index    int           `json:"index"`
	Function DeltaFunction `json:"function"`
}

// DeltaFunction is the function part of a DeltaToolCall.
type DeltaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ToolCall is a whole tool call of a non-streaming chat response.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function part of a ToolCall.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type ChatChunkChoice struct {
	Index        int             `json:"index"`
	Delta        ChatDelta       `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
	TokenIDs     json.RawMessage `json:"token_ids,omitempty"`
}

type CmplResponse struct {
	Head
	Choices           []CmplChoice       `json:"choices"`
	ServiceTier       json.RawMessage    `json:"service_tier"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Usage             UsageFull          `json:"usage"`
	KVTransferParams  json.RawMessage    `json:"kv_transfer_params"`
	Metrics           *PerRequestMetrics `json:"metrics"`
}

type CmplChoice struct {
	Index          int             `json:"index"`
	Text           string          `json:"text"`
	Logprobs       json.RawMessage `json:"logprobs"`
	FinishReason   string          `json:"finish_reason"`
	StopReason     json.RawMessage `json:"stop_reason"`
	TokenIDs       json.RawMessage `json:"token_ids"`
	PromptLogprobs json.RawMessage `json:"prompt_logprobs"`
	PromptTokenIDs json.RawMessage `json:"prompt_token_ids"`
}

type ChatResponse struct {
	Head
	Choices           []ChatChoice       `json:"choices"`
	ServiceTier       json.RawMessage    `json:"service_tier"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Usage             UsageFull          `json:"usage"`
	PromptLogprobs    json.RawMessage    `json:"prompt_logprobs"`
	PromptTokenIDs    json.RawMessage    `json:"prompt_token_ids"`
	PromptText        json.RawMessage    `json:"prompt_text"`
	KVTransferParams  json.RawMessage    `json:"kv_transfer_params"`
	Metrics           *PerRequestMetrics `json:"metrics"`
}

type ChatMessageOut struct {
	Role         string          `json:"role"`
	Content      string          `json:"content"`
	Refusal      json.RawMessage `json:"refusal"`
	Annotations  json.RawMessage `json:"annotations"`
	Audio        json.RawMessage `json:"audio"`
	FunctionCall json.RawMessage `json:"function_call"`
	ToolCalls    []ToolCall      `json:"tool_calls"`
	Reasoning    *string         `json:"reasoning"`
}

type ChatChoice struct {
	Index        int             `json:"index"`
	Message      ChatMessageOut  `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason"`
	TokenIDs     json.RawMessage `json:"token_ids"`
}

// EmbeddingResponse is vLLM's EmbeddingResponse (id "embd-...", object
// "list"); its usage has no completion tokens.
type EmbeddingResponse struct {
	Head
	Data  []EmbeddingData `json:"data"`
	Usage UsageFull       `json:"usage"`
}

// EmbeddingData is one vector of an EmbeddingResponse: a list of floats, or
// a base64 string of little-endian float32s.
type EmbeddingData struct {
	Index     int    `json:"index"`
	Object    string `json:"object"`
	Embedding any    `json:"embedding"`
}

// ErrorBody is vLLM's ErrorResponse.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

type ErrorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// Compact encodes v like pydantic's model_dump_json: no spaces, no HTML
// escaping, no trailing newline.
func Compact(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Every value passed here is a plain struct of strings and numbers.
		return []byte(`{}`)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// StreamErrorEvent renders an in-stream error the way vLLM does, with
// Python's json.dumps (spaces after ':' and ',', non-ASCII escaped).
func StreamErrorEvent(e ErrorInfo) []byte {
	param := "null"
	if e.Param != nil {
		param = pyQuote(*e.Param)
	}
	return fmt.Appendf(nil, `data: {"error": {"message": %s, "type": %s, "param": %s, "code": %d}}`+"\n\n",
		pyQuote(e.Message), pyQuote(e.Type), param, e.Code)
}

// pyQuote quotes s like Python's json.dumps with ensure_ascii=True.
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || (r > 0x7f && r <= 0xffff):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r > 0xffff:
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func utf16Pair(r rune) (rune, rune) {
	if r > utf8.MaxRune {
		r = utf8.RuneError
	}
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
