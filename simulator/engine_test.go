package simulator

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/simulator/textgen"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// TestTrace checks the ground-truth record of a streamed request.
func TestTrace(t *testing.T) {
	s, url := startTest(t, fastOptions())
	r := streamRequest(context.Background(), t, url+"/v1/chat/completions", streamChat, "X-Request-Id", "probe-42")
	if !r.done() {
		t.Fatalf("stream not done: %v", r.events)
	}
	recs := s.Trace()
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	rec := recs[0]
	if rec.RequestID != "probe-42" || rec.ID != "chatcmpl-probe-42" || rec.Status != 200 || !rec.Stream || rec.Path != "/v1/chat/completions" {
		t.Errorf("record %+v", rec)
	}
	kinds, tokens := []string{}, 0
	for i, ev := range rec.Events {
		kinds = append(kinds, ev.Kind)
		tokens += ev.Tokens
		if i > 0 && ev.Time.Before(rec.Events[i-1].Time) {
			t.Errorf("event %d written before event %d", i, i-1)
		}
		if ev.Offset <= 0 || ev.Offset != ev.Time.Sub(rec.Arrival).Seconds() {
			t.Errorf("event %d offset %g", i, ev.Offset)
		}
	}
	want := "role,content,content,finish,usage,done"
	if strings.Join(kinds, ",") != want || tokens != rec.CompletionTokens || tokens != 3 {
		t.Errorf("events %s (tokens %d, completion %d), want %s with 3 tokens", strings.Join(kinds, ","), tokens, rec.CompletionTokens, want)
	}
	if rec.Events[0].Time != rec.Events[1].Time {
		t.Error("the role chunk must be flushed together with the first content chunk")
	}
	resp, body := get(t, url+"/sim/trace?request_id=nope")
	if resp.StatusCode != 200 || string(body) != "[]" {
		t.Errorf("filtered trace: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, url+"/sim/trace", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 || len(s.Trace()) != 0 {
		t.Errorf("DELETE /sim/trace: %v %v, %d left", resp, err, len(s.Trace()))
	}
}

// TestStreamInterval checks that events carry stream_interval tokens.
func TestStreamInterval(t *testing.T) {
	cases := []struct {
		interval, maxTokens int
		want                []int // completion_tokens per event
	}{
		{1, 3, []int{1, 2, 3}},
		{3, 7, []int{1, 4, 7}},
		{4, 7, []int{1, 5, 7}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("interval %d", tc.interval), func(t *testing.T) {
			o := fastOptions()
			o.StreamInterval = tc.interval
			_, url := startTest(t, o)
			body := fmt.Sprintf(`{"prompt":"x","max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`, tc.maxTokens)
			r := streamRequest(context.Background(), t, url+"/v1/completions", body)
			var got []int
			for _, e := range r.events {
				var c wire.CmplChunk
				if e == "[DONE]" {
					continue
				}
				decodeJSON(t, []byte(e), &c)
				if len(c.Choices) > 0 {
					got = append(got, c.Usage.CompletionTokens)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("completion tokens per event %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPreemption overflows a small KV cache: sequences are preempted and
// recomputed, and every request still gets its full output.
func TestPreemption(t *testing.T) {
	o := fastOptions()
	o.MaxModelLen, o.KVCacheTokens = 64, 64
	o.PrefillBase, o.DecodeBase = 0, 200*time.Microsecond
	_, url := startTest(t, o)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"prompt":[%d,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19],"max_tokens":30,"ignore_eos":true}`, i)
			_, b := post(t, url+"/v1/completions", body)
			var r wire.CmplResponse
			decodeJSON(t, b, &r)
			if r.Usage.CompletionTokens != 30 || count(r.Choices[0].Text) != 30 {
				t.Errorf("request %d: usage %+v text %q", i, r.Usage, r.Choices[0].Text)
			}
		})
	}
	wg.Wait()
	mfs := promtext.Scrape(t, url+"/metrics")
	if n := mfs["vllm:num_preemptions_total"].Metric[0].GetCounter().GetValue(); n == 0 {
		t.Error("no preemption counted")
	}
	if n := mfs["vllm:kv_cache_usage_perc"].Metric[0].GetGauge().GetValue(); n != 0 {
		t.Errorf("kv cache usage %g after all requests finished, want 0", n)
	}
}

func count(text string) int { return len(textgen.Split(text)) }

// TestSimpleEndpoints covers /health, /ping, /version, /load and /v1/models.
func TestSimpleEndpoints(t *testing.T) {
	_, url := startTest(t, fastOptions())
	cases := []struct {
		path, body string
	}{
		{"/health", ""},
		{"/ping", ""},
		{"/version", `{"version":"0.26.0"}`},
		{"/load", `{"server_load":0}`},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			resp, b := get(t, url+tc.path)
			if resp.StatusCode != 200 || string(b) != tc.body {
				t.Errorf("%d %q, want 200 %q", resp.StatusCode, b, tc.body)
			}
		})
	}
	t.Run("/v1/models", func(t *testing.T) {
		_, b := get(t, url+"/v1/models")
		var m struct {
			Object string `json:"object"`
			Data   []struct {
				ID          string `json:"id"`
				OwnedBy     string `json:"owned_by"`
				MaxModelLen int    `json:"max_model_len"`
			} `json:"data"`
		}
		decodeJSON(t, b, &m)
		if m.Object != "list" || len(m.Data) != 1 || m.Data[0].ID != "sim-llama" || m.Data[0].MaxModelLen != 8192 || m.Data[0].OwnedBy != "vllm" {
			t.Errorf("models %s", b)
		}
	})
}

func get(t testing.TB, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, []byte(b.String())
}
