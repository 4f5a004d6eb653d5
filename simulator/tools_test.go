package simulator

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

const weatherTools = `[{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object",
"properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"},"unit":{"type":"string","enum":["c","f"]},
"lat":{"type":["number","null"]},"where":{"type":"object","properties":{"country":{"type":"string"}},"required":["country"]},"note":{"type":"string"}},
"required":["city","days","metric","unit","lat","where"]}}},
{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"type":"string"}},"required":["zone"]}}}]`

// weatherArgs is the arguments schema of get_weather, decoded strictly.
type weatherArgs struct {
	City   string  `json:"city"`
	Days   int     `json:"days"`
	Metric bool    `json:"metric"`
	Unit   string  `json:"unit"`
	Lat    float64 `json:"lat"`
	Where  struct {
		Country string `json:"country"`
	} `json:"where"`
}

func toolRequest(choice string, stream bool) string {
	return fmt.Sprintf(`{"messages":[{"role":"user","content":"Weather in the capital?"}],"tools":%s,"tool_choice":%s,"stream":%v}`,
		weatherTools, choice, stream)
}

// checkWeatherArgs parses the arguments as get_weather's schema: every
// required property present with its type, nothing else.
func checkWeatherArgs(t *testing.T, args string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	var a weatherArgs
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("arguments %q: %v", args, err)
	}
	var keys map[string]json.RawMessage
	decodeJSON(t, []byte(args), &keys)
	if len(keys) != 6 || a.City == "" || (a.Unit != "c" && a.Unit != "f") || a.Where.Country == "" {
		t.Errorf("arguments %s miss a required property", args)
	}
}

// TestToolCallStream checks vLLM's streamed tool-call shape for a forced
// call: the first delta carries id, type, index and the function name, the
// later ones only index and an argument piece, and the pieces join into
// arguments valid for the tool's schema.
func TestToolCallStream(t *testing.T) {
	_, url := startTest(t, fastOptions())
	cases := []struct {
		name, choice, finish string
	}{
		{"named function", `{"type":"function","function":{"name":"get_weather"}}`, "stop"},
		{"required", `"required"`, "tool_calls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := postChatStream(t, url, toolRequest(tc.choice, true))
			var args strings.Builder
			pieces := 0
			for i, ch := range cs.chunks[1:] {
				raw := cs.raw[i+1]
				for _, x := range ch.Choices {
					if x.Delta.Content != nil || x.Delta.Reasoning != nil {
						t.Errorf("event %s carries text", raw)
					}
					for _, tc := range x.Delta.ToolCalls {
						args.WriteString(*tc.Function.Arguments)
						pieces++
					}
				}
				keys := keyOrder(t, raw)
				want := []string{"choices.delta.tool_calls.index", "choices.delta.tool_calls.function", "choices.delta.tool_calls.function.arguments"}
				if pieces == 1 {
					want = []string{"choices.delta.tool_calls.id", "choices.delta.tool_calls.type", "choices.delta.tool_calls.index",
						"choices.delta.tool_calls.function", "choices.delta.tool_calls.function.name", "choices.delta.tool_calls.function.arguments"}
				}
				if got := deltaKeys(keys); len(got) > 2 && !slices.Equal(got[2:], want) {
					t.Errorf("event %d delta keys %v, want %v", i+1, got, want)
				}
			}
			first := cs.chunks[1].Choices[0].Delta.ToolCalls[0]
			if *first.Type != "function" || *first.Function.Name != "get_weather" || *first.Index != 0 || !strings.HasPrefix(*first.ID, "chatcmpl-tool-") {
				t.Errorf("first tool delta %s", cs.raw[1])
			}
			if pieces < 3 {
				t.Errorf("arguments came in %d deltas, want several", pieces)
			}
			checkWeatherArgs(t, args.String())
			last := cs.chunks[len(cs.chunks)-1].Choices[0]
			if last.FinishReason == nil || *last.FinishReason != tc.finish {
				t.Errorf("finish reason %v, want %s", last.FinishReason, tc.finish)
			}
		})
	}
	t.Run("auto and none answer in text", func(t *testing.T) {
		for _, choice := range []string{`"auto"`, `"none"`} {
			cs := postChatStream(t, url, toolRequest(choice, true))
			_, content, _ := cs.texts()
			if content == "" || slices.ContainsFunc(cs.raw, func(r string) bool { return strings.Contains(r, "tool_calls") }) {
				t.Errorf("tool_choice %s: content %q, events %v", choice, content, cs.raw)
			}
		}
	})
}

// deltaKeys lists the delta's keys of one chunk.
func deltaKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, "choices.delta") {
			out = append(out, k)
		}
	}
	return out
}

// TestToolCallResponse checks the non-streaming message of a forced call.
func TestToolCallResponse(t *testing.T) {
	_, url := startTest(t, fastOptions())
	_, b := post(t, url+"/v1/chat/completions", toolRequest(`{"type":"function","function":{"name":"get_time"}}`, false))
	var r wire.ChatResponse
	decodeJSON(t, b, &r)
	c := r.Choices[0]
	if c.FinishReason != "stop" || c.Message.Content != "" || len(c.Message.ToolCalls) != 1 {
		t.Fatalf("response %s", b)
	}
	tc := c.Message.ToolCalls[0]
	if tc.Type != "function" || tc.Function.Name != "get_time" || !strings.HasPrefix(tc.ID, "chatcmpl-tool-") {
		t.Errorf("tool call %+v", tc)
	}
	if tc.Function.Arguments != `{"zone": "`+valueWordFor(t, tc.Function.Arguments)+`"}` {
		t.Errorf("arguments %s", tc.Function.Arguments)
	}
}

// generatedValues are the values toolcall gives string arguments.
var generatedValues = []string{"Paris", "Berlin", "Tokyo", "Lima", "Oslo", "Cairo", "Quito", "Seoul"}

// valueWordFor returns the zone value of get_time's arguments.
func valueWordFor(t *testing.T, args string) string {
	t.Helper()
	var a struct{ Zone string }
	decodeJSON(t, []byte(args), &a)
	if !slices.Contains(generatedValues, a.Zone) {
		t.Errorf("zone %q is not a generated value", a.Zone)
	}
	return a.Zone
}

// TestToolChoiceValidation checks vLLM's 400s for bad tools and tool_choice.
func TestToolChoiceValidation(t *testing.T) {
	_, url := startTest(t, fastOptions())
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	const validation, badRequest = "Bad Request", "BadRequestError"
	cases := []struct {
		name, body, msg, typ string
	}{
		{"choice without tools", `{` + msgs + `,"tool_choice":"required"}`, "When using `tool_choice`, `tools` must be set.", validation},
		{"empty tools", `{` + msgs + `,"tools":[],"tool_choice":"auto"}`, "`tools` must not be an empty array.", validation},
		{"unknown function", `{` + msgs + `,"tools":` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`,
			"The tool specified in `tool_choice` does not match any of the specified `tools`", validation},
		{"bad mode", `{` + msgs + `,"tools":` + weatherTools + `,"tool_choice":"always"}`, "Invalid value for `tool_choice`: always!", validation},
		{"parameters not an object", `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]}`,
			"'loc': ('body', 'tools', 0, 'function', 'parameters')", validation},
		{"properties not an object", `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":[1]}}}]}`,
			"tools[0].function.parameters is not a usable JSON schema", badRequest},
		{"no name", `{` + msgs + `,"tools":` + weatherTools + `,"tool_choice":{"type":"function","function":{}}}`, "Expected field `name`", validation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, url+"/v1/chat/completions", tc.body)
			var e wire.ErrorBody
			decodeJSON(t, b, &e)
			if resp.StatusCode != 400 || e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("status %d body %s, want 400 %s with %q", resp.StatusCode, b, tc.typ, tc.msg)
			}
			// vLLM names the parameter of its BadRequestError only.
			if gotParam, wantParam := e.Error.Param != nil, tc.typ == badRequest; gotParam != wantParam || (gotParam && *e.Error.Param != "tools") {
				t.Errorf("body %s: param, want \"tools\" for a %s only", b, badRequest)
			}
		})
	}
}

// TestFaultBadToolCall checks that the fault breaks the arguments' JSON at
// its seeded rate: exactly the requests its own stream picks, whatever the
// order the concurrent requests arrive in.
func TestFaultBadToolCall(t *testing.T) {
	const n, rate = 200, 0.25
	o := fastOptions()
	o.Trace = false
	o.DecodeBase = 0
	o.Faults = Faults{BadToolCall: rate}
	_, url := startTest(t, o)
	want := 0
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x7001))
	for range n {
		if rng.Float64() < rate {
			want++
		}
	}
	var bad atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				_, b := post(t, url+"/v1/chat/completions", toolRequest(`{"type":"function","function":{"name":"get_time"}}`, false))
				var r wire.ChatResponse
				decodeJSON(t, b, &r)
				if !json.Valid([]byte(r.Choices[0].Message.ToolCalls[0].Function.Arguments)) {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := int(bad.Load()); got != want || got < n*15/100 || got > n*35/100 {
		t.Errorf("%d of %d tool calls are invalid JSON, want %d (rate %g)", got, n, want, rate)
	}
	t.Run("text answers are untouched", func(t *testing.T) {
		_, b := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"What is 12*12?"}]}`)
		if !strings.Contains(string(b), `"content":"144."`) {
			t.Errorf("response %s", b)
		}
	})
}
