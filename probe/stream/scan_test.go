package stream

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// chunkSeeds are events the fast decoder must agree with encoding/json on:
// real vLLM chunks and every shape it must hand over to encoding/json.
var chunkSeeds = []struct {
	name string
	data string
	fast bool // the fast path must take it
}{
	{"chat content with continuous usage", `{"id":"chatcmpl-a1","object":"chat.completion.chunk","created":1786304610,"model":"granite-4.1-8b","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null,"token_ids":null}],"usage":{"prompt_tokens":26,"total_tokens":27,"completion_tokens":1}}`, true},
	{"role chunk", `{"id":"c","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null}`, true},
	{"finish", `{"model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop","stop_reason":null}]}`, true},
	{"usage only", `{"model":"m","choices":[],"usage":{"prompt_tokens":17,"total_tokens":26,"completion_tokens":9,"prompt_tokens_details":null},"system_fingerprint":"vllm-0.26.0"}`, true},
	{"completions text", `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" 144","logprobs":null,"finish_reason":null,"stop_reason":null}]}`, true},
	{"reasoning", `{"model":"m","choices":[{"index":0,"delta":{"reasoning":"think"}}]}`, true},
	{"vLLM 0.23 continuous usage (reference sample)", `{"id":"chatcmpl-a79c","object":"chat.completion.chunk","created":1790211793,"model":"qwen3.5-4b-32k","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":26,"total_tokens":26,"completion_tokens":0}}`, true},
	{"reasoning_content (older vLLM)", `{"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}`, true},
	{"usage with reasoning tokens", `{"model":"m","choices":[],"usage":{"prompt_tokens":9,"total_tokens":40,"completion_tokens":31,"completion_tokens_details":{"accepted_prediction_tokens":null,"reasoning_tokens":24}}}`, true},
	{"usage with null details", `{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":31,"completion_tokens_details":null}}`, true},
	{"usage with null reasoning tokens", `{"choices":[],"usage":{"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":null}}}`, true},
	{"repeated details", `{"usage":{"completion_tokens_details":{"reasoning_tokens":1},"completion_tokens_details":{}}}`, false},
	{"abridged sample (not JSON)", `{… "choices":[{"index":0,"delta":{"content":"one"},…}]}`, false},
	{"tool call delta", `{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}`, true},
	{"empty tool calls", `{"model":"m","choices":[{"index":0,"delta":{"content":"x","tool_calls":[]}}]}`, true},
	{"white space and nulls", " {\r\n\t\"model\" : null , \"choices\" : null , \"usage\" : null , \"metrics\" : null , \"error\" : null } ", true},
	{"numbers everywhere", `{"a":-0,"b":1.5e-3,"c":[1,2.0,3E+4],"d":{"e":true,"f":false},"usage":{"prompt_tokens":0,"completion_tokens":-1}}`, true},
	{"non-ASCII text", `{"model":"m","choices":[{"delta":{"content":"€ 你好 🙂"}}]}`, true},

	{"escaped content", `{"model":"m","choices":[{"delta":{"content":"line\nnext \u00e9 \ud83d\ude00"}}]}`, false},
	{"escaped key", `{"mo\u0064el":"m"}`, false},
	{"key in another case", `{"Model":"m","CHOICES":[{"Delta":{"Content":"x"}}]}`, false},
	{"repeated choices", `{"choices":[{"text":"a"}],"choices":[{"delta":{"content":"b"}}]}`, false},
	{"repeated usage", `{"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`, false},
	{"error event", `{"error":{"message":"boom","type":"InternalServerError","code":500}}`, false},
	{"per-request metrics", `{"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1},"metrics":{"queue_time_ms":1.5,"time_to_first_token_ms":20}}`, false},
	{"fractional token count", `{"usage":{"prompt_tokens":1.0,"completion_tokens":2}}`, false},
	{"huge token count", `{"usage":{"prompt_tokens":99999999999999999999999}}`, false},
	{"string token count", `{"usage":{"prompt_tokens":"5"}}`, false},
	{"number as model", `{"model":5}`, false},
	{"invalid UTF-8", "{\"model\":\"m\xff\"}", false},
	{"control character", "{\"model\":\"a\tb\"}", false},
	{"truncated", `{"model":"m","choices":[{"delta":{"content":"Hel`, false},
	{"trailing garbage", `{"model":"m"} x`, false},
	{"trailing comma", `{"model":"m",}`, false},
	{"leading zero", `{"a":01}`, false},
	{"bare minus", `{"a":-}`, false},
	{"array document", `[1,2]`, false},
	{"null choice", `{"choices":[null]}`, false},
	{"deep nesting", `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, false},
	{"not JSON", `hello`, false},
}

// decodeJSON is the reference: what decode did before the fast path.
func decodeJSON(data []byte) (Chunk, error) {
	var c Chunk
	err := json.Unmarshal(data, &c)
	return c, err
}

// sameChunk compares the fields the prober reads.
func sameChunk(a, b *Chunk) bool {
	if a.Model != b.Model || len(a.Choices) != len(b.Choices) || !reflect.DeepEqual(a.Usage, b.Usage) ||
		a.HasError() != b.HasError() || !sameMetrics(a.Metrics, b.Metrics) {
		return false
	}
	for i := range a.Choices {
		x, y := &a.Choices[i], &b.Choices[i]
		if x.Text != y.Text || x.Delta.Content != y.Delta.Content || x.Delta.Reasoning != y.Delta.Reasoning ||
			x.Delta.ReasoningContent != y.Delta.ReasoningContent ||
			x.Delta.HasToolCall() != y.Delta.HasToolCall() || !reflect.DeepEqual(x.FinishReason, y.FinishReason) {
			return false
		}
	}
	return true
}

// sameMetrics compares two metrics objects, a missing one equal to one
// carrying neither time.
func sameMetrics(a, b *Metrics) bool {
	var x, y Metrics
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	return reflect.DeepEqual(x, y)
}

// checkDecode decodes data with decode (fast path first) into a reused
// chunk and compares with encoding/json alone; it returns whether the fast
// path took the event.
func checkDecode(t *testing.T, c *Chunk, data []byte) bool {
	t.Helper()
	want, wantErr := decodeJSON(data)
	err := c.Decode(data)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("decode(%q): err %v, encoding/json %v", data, err, wantErr)
	}
	if err == nil && !sameChunk(c, &want) {
		t.Fatalf("decode(%q) = %+v, encoding/json %+v", data, *c, want)
	}
	var probe Chunk
	probe.lastModel = c.lastModel
	return probe.decodeFast(data)
}

func TestChunkDecodeFast(t *testing.T) {
	var c Chunk // reused across cases, as readStream does
	for _, tc := range chunkSeeds {
		t.Run(tc.name, func(t *testing.T) {
			if fast := checkDecode(t, &c, []byte(tc.data)); fast != tc.fast {
				t.Errorf("fast path took it: %v, want %v", fast, tc.fast)
			}
		})
	}
}

// FuzzChunkDecode checks that decode with the fast path agrees with
// encoding/json on any input: same error or no error, same fields.
func FuzzChunkDecode(f *testing.F) {
	for _, tc := range chunkSeeds {
		f.Add([]byte(tc.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Chunk
		checkDecode(t, &c, data)
		checkDecode(t, &c, data) // again on the reused chunk
	})
}

func TestChunkReasoningFields(t *testing.T) {
	var c Chunk
	for _, tc := range []struct {
		name, data   string
		reasoning    string
		reasonTokens int // -1: not reported
	}{
		{"reasoning", `{"choices":[{"delta":{"reasoning":"a"}}]}`, "a", -1},
		{"reasoning_content", `{"choices":[{"delta":{"reasoning_content":"b"}}]}`, "b", -1},
		{"both, reasoning wins", `{"choices":[{"delta":{"reasoning":"c","reasoning_content":"d"}}]}`, "c", -1},
		{"usage details", `{"choices":[],"usage":{"completion_tokens":31,"completion_tokens_details":{"reasoning_tokens":24}}}`, "", 24},
		{"usage details escaped (encoding/json)", `{"choices":[],"usage":{"completion_tokens":31,"completion_tokens_details":{"reasoning_tokens":24,"x":"\n"}}}`, "", 24},
		{"usage without details", `{"choices":[],"usage":{"completion_tokens":31}}`, "", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.Decode([]byte(tc.data)); err != nil {
				t.Fatal(err)
			}
			if len(c.Choices) > 0 {
				if got := c.Choices[0].Delta.ReasoningText(); got != tc.reasoning {
					t.Errorf("ReasoningText = %q, want %q", got, tc.reasoning)
				}
			}
			got := -1
			if c.Usage != nil && c.Usage.CompletionTokensDetails.ReasoningTokens != nil {
				got = *c.Usage.CompletionTokensDetails.ReasoningTokens
			}
			if got != tc.reasonTokens {
				t.Errorf("reasoning tokens = %d, want %d", got, tc.reasonTokens)
			}
		})
	}
}
