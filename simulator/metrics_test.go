package simulator

import (
	"math"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// Reference bucket boundaries, copied from vllm-api.md section 5.2.
var (
	refTTFT    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	refITL     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	refLatency = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	refIter    = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	// 1-2-5 ladder up to max_model_len 8192.
	ref125 = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}
)

// TestMetricsMatchReference checks names, types, labels and every bucket
// boundary of the vllm:* series.
func TestMetricsMatchReference(t *testing.T) {
	_, url := startTest(t, fastOptions())
	post(t, url+"/v1/completions", `{"prompt":"What is 1+1?","max_tokens":4}`)
	mfs := promtext.Scrape(t, url+"/metrics")
	cases := []struct {
		name    string
		typ     dto.MetricType
		buckets []float64
	}{
		{"vllm:num_requests_running", dto.MetricType_GAUGE, nil},
		{"vllm:num_requests_waiting", dto.MetricType_GAUGE, nil},
		{"vllm:kv_cache_usage_perc", dto.MetricType_GAUGE, nil},
		{"vllm:prompt_tokens_total", dto.MetricType_COUNTER, nil},
		{"vllm:generation_tokens_total", dto.MetricType_COUNTER, nil},
		{"vllm:num_preemptions_total", dto.MetricType_COUNTER, nil},
		{"vllm:prefix_cache_queries_total", dto.MetricType_COUNTER, nil},
		{"vllm:prefix_cache_hits_total", dto.MetricType_COUNTER, nil},
		{"vllm:prompt_tokens_cached_total", dto.MetricType_COUNTER, nil},
		{"vllm:time_to_first_token_seconds", dto.MetricType_HISTOGRAM, refTTFT},
		{"vllm:inter_token_latency_seconds", dto.MetricType_HISTOGRAM, refITL},
		{"vllm:request_time_per_output_token_seconds", dto.MetricType_HISTOGRAM, refITL},
		{"vllm:e2e_request_latency_seconds", dto.MetricType_HISTOGRAM, refLatency},
		{"vllm:request_queue_time_seconds", dto.MetricType_HISTOGRAM, refLatency},
		{"vllm:request_prefill_time_seconds", dto.MetricType_HISTOGRAM, refLatency},
		{"vllm:request_decode_time_seconds", dto.MetricType_HISTOGRAM, refLatency},
		{"vllm:request_inference_time_seconds", dto.MetricType_HISTOGRAM, refLatency},
		{"vllm:request_prompt_tokens", dto.MetricType_HISTOGRAM, ref125},
		{"vllm:request_generation_tokens", dto.MetricType_HISTOGRAM, ref125},
		{"vllm:request_max_num_generation_tokens", dto.MetricType_HISTOGRAM, ref125},
		{"vllm:request_params_max_tokens", dto.MetricType_HISTOGRAM, ref125},
		{"vllm:request_params_n", dto.MetricType_HISTOGRAM, []float64{1, 2, 5, 10, 20}},
		{"vllm:iteration_tokens_total", dto.MetricType_HISTOGRAM, refIter},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mf, ok := mfs[tc.name]
			if !ok {
				t.Fatalf("%s missing", tc.name)
			}
			if mf.GetType() != tc.typ {
				t.Fatalf("type %s, want %s", mf.GetType(), tc.typ)
			}
			if len(mf.Metric) != 1 {
				t.Fatalf("want one series, got %d", len(mf.Metric))
			}
			m := mf.Metric[0]
			checkLabels(t, m, map[string]string{"model_name": "sim-llama", "engine": "0"})
			if tc.buckets == nil {
				return
			}
			var got []float64
			for _, b := range m.GetHistogram().GetBucket() {
				got = append(got, b.GetUpperBound())
			}
			// The text format carries the +Inf bucket explicitly.
			if want := append(slices.Clone(tc.buckets), math.Inf(1)); !slices.Equal(got, want) {
				t.Errorf("buckets\n got %v\nwant %v", got, want)
			}
		})
	}
	t.Run("request_success_total", func(t *testing.T) {
		mf := mfs["vllm:request_success_total"]
		if mf == nil || mf.GetType() != dto.MetricType_COUNTER {
			t.Fatal("vllm:request_success_total missing or not a counter")
		}
		got := map[string]float64{}
		for _, m := range mf.Metric {
			labels := promtext.Labels(m)
			got[labels["finished_reason"]] = m.GetCounter().GetValue()
			delete(labels, "finished_reason")
			if labels["model_name"] != "sim-llama" || labels["engine"] != "0" || len(labels) != 2 {
				t.Errorf("labels %v", labels)
			}
		}
		want := map[string]float64{"stop": 1, "length": 0, "abort": 0, "error": 0, "repetition": 0}
		if len(got) != len(want) {
			t.Fatalf("finished reasons %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("finished_reason %s = %g, want %g", k, got[k], v)
			}
		}
	})
	t.Run("cache_config_info has no model_name", func(t *testing.T) {
		mf := mfs["vllm:cache_config_info"]
		if mf == nil {
			t.Fatal("vllm:cache_config_info missing")
		}
		l := promtext.Labels(mf.Metric[0])
		if _, ok := l["model_name"]; ok || l["engine"] != "0" || l["block_size"] != "16" {
			t.Errorf("labels %v", l)
		}
	})
}

func checkLabels(t *testing.T, m *dto.Metric, want map[string]string) {
	t.Helper()
	got := promtext.Labels(m)
	if len(got) != len(want) {
		t.Errorf("labels %v, want %v", got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s=%q, want %q", k, got[k], v)
		}
	}
}

// TestMetricsCountTokens checks the counters against the usage the client saw.
func TestMetricsCountTokens(t *testing.T) {
	_, url := startTest(t, fastOptions())
	var prompt, gen float64
	for _, body := range []string{
		`{"prompt":"What is 2*21?","max_tokens":10}`,
		`{"prompt":[5,6,7,8,9,10],"max_tokens":7,"ignore_eos":true}`,
	} {
		_, b := post(t, url+"/v1/completions", body)
		var r wire.CmplResponse
		decodeJSON(t, b, &r)
		prompt += float64(r.Usage.PromptTokens)
		gen += float64(r.Usage.CompletionTokens)
	}
	mfs := promtext.Scrape(t, url+"/metrics")
	cases := []struct {
		name string
		want float64
	}{
		{"vllm:prompt_tokens_total", prompt},
		{"vllm:generation_tokens_total", gen},
		{"vllm:prefix_cache_queries_total", prompt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mfs[tc.name].Metric[0].GetCounter().GetValue(); got != tc.want {
				t.Errorf("%s = %g, want %g", tc.name, got, tc.want)
			}
		})
	}
	if n := mfs["vllm:e2e_request_latency_seconds"].Metric[0].GetHistogram().GetSampleCount(); n != 2 {
		t.Errorf("e2e count %d, want 2", n)
	}
}
