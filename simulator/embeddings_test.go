package simulator

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/promtext"
)

// embeddingBody is what the tests read of an embedding response.
type embeddingBody struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Index     int       `json:"index"`
		Object    string    `json:"object"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func postEmbeddings(t *testing.T, url, body string) embeddingBody {
	t.Helper()
	resp, b := post(t, url+"/v1/embeddings", body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	want := []string{"id", "object", "created", "model", "data", "data.index", "data.object", "data.embedding",
		"usage", "usage.prompt_tokens", "usage.total_tokens", "usage.completion_tokens", "usage.prompt_tokens_details"}
	var got []string
	for _, k := range keyOrder(t, string(b)) {
		if !slices.Contains(got, k) {
			got = append(got, k)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	var e embeddingBody
	decodeJSON(t, b, &e)
	return e
}

// TestEmbeddings checks the shape, the length, finiteness and unit norm of
// the vectors, and that they depend on the input alone.
func TestEmbeddings(t *testing.T) {
	o := fastOptions()
	o.EmbeddingDim = 96
	_, url := startTest(t, o)
	e := postEmbeddings(t, url, `{"model":"sim-llama","input":["hello world","the sea is blue"]}`)
	if !strings.HasPrefix(e.ID, "embd-") || e.Object != "list" || e.Model != "sim-llama" || len(e.Data) != 2 {
		t.Fatalf("response %+v", e)
	}
	// "hello", " world", "the", " sea", " is", " blue".
	if e.Usage.PromptTokens != 6 || e.Usage.TotalTokens != 6 {
		t.Errorf("usage %+v, want 6 prompt tokens", e.Usage)
	}
	for i, d := range e.Data {
		if d.Index != i || d.Object != "embedding" || len(d.Embedding) != 96 {
			t.Fatalf("data %d: index %d object %q dim %d", i, d.Index, d.Object, len(d.Embedding))
		}
		norm := 0.0
		for _, x := range d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("data %d holds %v", i, x)
			}
			norm += x * x
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Errorf("data %d norm² %g, want 1", i, norm)
		}
	}
	if slices.Equal(e.Data[0].Embedding, e.Data[1].Embedding) {
		t.Error("different inputs gave the same vector")
	}
	t.Run("deterministic across servers and seeds", func(t *testing.T) {
		o2 := o
		o2.Seed = 99
		_, url2 := startTest(t, o2)
		again := postEmbeddings(t, url2, `{"input":"hello world"}`)
		if !slices.Equal(again.Data[0].Embedding, e.Data[0].Embedding) {
			t.Error("the same input gave another vector")
		}
	})
	t.Run("token ids and base64", func(t *testing.T) {
		_, b := post(t, url+"/v1/embeddings", `{"input":[[1,2,3]],"encoding_format":"base64"}`)
		var r struct {
			Data []struct {
				Embedding string `json:"embedding"`
			} `json:"data"`
		}
		decodeJSON(t, b, &r)
		raw, err := base64.StdEncoding.DecodeString(r.Data[0].Embedding)
		if err != nil || len(raw) != 4*96 {
			t.Fatalf("base64 %q: %v, %d bytes", r.Data[0].Embedding, err, len(raw))
		}
		floats := postEmbeddings(t, url, `{"input":[1,2,3]}`).Data[0].Embedding
		for i, x := range floats {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); float64(got) != x {
				t.Fatalf("value %d: base64 %g, float %g", i, got, x)
			}
		}
	})
}

// TestEmbeddingsRefusals checks vLLM's 400s and 404 and the HTTP faults.
func TestEmbeddingsRefusals(t *testing.T) {
	o := fastOptions()
	o.MaxModelLen = 8
	s, url := startTest(t, o)
	cases := []struct {
		name, body, want string
		faults           Faults
		status           int
	}{
		{"empty input", `{"input":""}`, `"param":"input"`, Faults{}, 400},
		{"missing input", `{}`, `'loc': ('body', 'input')`, Faults{}, 400},
		{"too long", `{"input":"one two three four five six seven eight nine"}`, "maximum context length is 8 tokens", Faults{}, 400},
		{"other dimensions", `{"input":"hi","dimensions":3}`, "matryoshka", Faults{}, 400},
		{"bad format", `{"input":"hi","encoding_format":"int8"}`, "encoding_format", Faults{}, 400},
		{"unknown model", `{"input":"hi","model":"gpt"}`, "The model `gpt` does not exist.", Faults{}, 404},
		{"http_503 fault", `{"input":"hi"}`, "Service Unavailable", Faults{HTTP503: 1}, 503},
		{"error_event fault", `{"input":"hi"}`, "Internal server error", Faults{ErrorEvent: 1}, 500},
		{"wrong_model fault", `{"input":"hi"}`, `"model":"sim-llama-wrong"`, Faults{WrongModel: 1}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.SetFaults(tc.faults)
			resp, b := post(t, url+"/v1/embeddings", tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("status %d body %s; want %d with %q", resp.StatusCode, b, tc.status, tc.want)
			}
		})
	}
}

// TestEmbeddingsServerMetrics checks that each input of an embedding
// request is one engine request, as in vLLM: its prompt tokens and a
// success count, no generated token does.
func TestEmbeddingsServerMetrics(t *testing.T) {
	_, url := startTest(t, fastOptions())
	e := postEmbeddings(t, url, `{"input":["hello world","x y z"]}`)
	mfs := promtext.Scrape(t, url+"/metrics")
	if got := mfs["vllm:prompt_tokens_total"].Metric[0].GetCounter().GetValue(); got != float64(e.Usage.PromptTokens) || got != 5 {
		t.Errorf("prompt tokens %g, usage %d; want 5", got, e.Usage.PromptTokens)
	}
	if got := mfs["vllm:generation_tokens_total"].Metric[0].GetCounter().GetValue(); got != 0 {
		t.Errorf("generation tokens %g, want 0", got)
	}
	for _, name := range []string{"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_prompt_tokens"} {
		if n := mfs[name].Metric[0].GetHistogram().GetSampleCount(); n != 2 {
			t.Errorf("%s samples %d, want 2", name, n)
		}
	}
	for _, name := range []string{"vllm:time_to_first_token_seconds", "vllm:request_generation_tokens"} {
		if n := mfs[name].Metric[0].GetHistogram().GetSampleCount(); n != 0 {
			t.Errorf("%s samples %d, want 0", name, n)
		}
	}
}

// TestEmbeddingsQueue checks that an embedding request waits for a place in
// the running batch like a generation does.
func TestEmbeddingsQueue(t *testing.T) {
	o := fastOptions()
	o.MaxNumSeqs = 1
	_, url := startTest(t, o)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	genDone := make(chan struct{})
	go func() {
		defer close(genDone)
		// About two seconds of decoding at 1 ms a step; cancelled below.
		streamRequest(ctx, t, url+"/v1/completions", `{"prompt":"hi","max_tokens":2000,"ignore_eos":true,"stream":true}`)
	}()
	waitGauge(t, url, "vllm:num_requests_running", 1)
	embStatus := make(chan int, 1)
	go func() {
		resp, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(`{"input":"queued"}`))
		if err != nil {
			embStatus <- 0
			return
		}
		resp.Body.Close()
		embStatus <- resp.StatusCode
	}()
	waitGauge(t, url, "vllm:num_requests_waiting", 1)
	select {
	case <-embStatus:
		t.Fatal("the embedding finished while the batch was full")
	default:
	}
	cancel()
	<-genDone
	if status := <-embStatus; status != 200 {
		t.Errorf("embedding status %d once the batch had room, want 200", status)
	}
}

// waitGauge polls /metrics until the gauge reads want, for up to 5 s.
func waitGauge(t *testing.T, url, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := promtext.Scrape(t, url+"/metrics")[name].Metric[0].GetGauge().GetValue()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %g after 5s, want %g", name, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
