package engine

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Bucket boundaries of vLLM's histograms (vllm/v1/metrics/loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	iterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	paramsNBuckets        = []float64{1, 2, 5, 10, 20}
)

// finishedReasons are the label values of vllm:request_success_total,
// pre-created like vLLM does.
var finishedReasons = []string{"stop", "length", "abort", "error", "repetition"}

// buckets125 is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to max.
func buckets125(maxValue int) []float64 {
	var out []float64
	for exp := 1.0; ; exp *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * exp
			if v > float64(maxValue) {
				return out
			}
			out = append(out, v)
		}
	}
}

// Metrics are the simulator's vllm:* series.
type Metrics struct {
	running, waiting, kvUsage                   prometheus.Gauge
	waitingReason                               *prometheus.GaugeVec
	prefixQueries, prefixHits, promptCached     prometheus.Counter
	preemptions, promptTokens, generationTokens prometheus.Counter
	success                                     *prometheus.CounterVec
	promptLen, genLen, maxGenLen                prometheus.Histogram
	paramsMaxTokens, paramsN, iterationTokens   prometheus.Histogram
	ttft, itl, tpot, e2e                        prometheus.Histogram
	queueTime, prefillTime, decodeTime          prometheus.Histogram
	inferenceTime                               prometheus.Histogram
}

// NewMetrics registers every series on reg with vLLM's names, help texts,
// labels and buckets, for an engine with config c serving model, whose
// sequences are at most maxModelLen tokens long.
func NewMetrics(reg prometheus.Registerer, model string, maxModelLen int, c Config) *Metrics {
	labels := prometheus.Labels{"model_name": model, "engine": "0"}
	f := factory{reg: reg, labels: labels}
	lengths := buckets125(maxModelLen)
	m := &Metrics{
		running:          f.gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:          f.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kvUsage:          f.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		prefixQueries:    f.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens."),
		prefixHits:       f.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."),
		promptCached:     f.counter("vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external)."),
		preemptions:      f.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine."),
		promptTokens:     f.counter("vllm:prompt_tokens", "Number of prefill tokens processed."),
		generationTokens: f.counter("vllm:generation_tokens", "Number of generation tokens processed."),
		promptLen:        f.histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", lengths),
		genLen:           f.histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", lengths),
		maxGenLen:        f.histogram("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", lengths),
		paramsMaxTokens:  f.histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", lengths),
		paramsN:          f.histogram("vllm:request_params_n", "Histogram of the n request parameter.", paramsNBuckets),
		iterationTokens:  f.histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", iterationTokenBuckets),
		ttft:             f.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:              f.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		tpot:             f.histogram("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itlBuckets),
		e2e:              f.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestLatencyBuckets),
		queueTime:        f.histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestLatencyBuckets),
		prefillTime:      f.histogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestLatencyBuckets),
		decodeTime:       f.histogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestLatencyBuckets),
		inferenceTime:    f.histogram("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", requestLatencyBuckets),
	}
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm:request_success_total", Help: "Count of successfully processed requests.", ConstLabels: labels,
	}, []string{"finished_reason"})
	reg.MustRegister(m.success)
	for _, r := range finishedReasons {
		m.success.WithLabelValues(r)
	}
	m.waitingReason = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vllm:num_requests_waiting_by_reason", Help: "Number of requests waiting, by reason.", ConstLabels: labels,
	}, []string{"reason"})
	reg.MustRegister(m.waitingReason)
	for _, r := range []string{"capacity", "deferred"} {
		m.waitingReason.WithLabelValues(r)
	}
	cacheInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig",
		ConstLabels: prometheus.Labels{
			"engine": "0", "block_size": strconv.Itoa(prefixBlock), "cache_dtype": "auto",
			"enable_prefix_caching": pyBool(c.PrefixCaching), "gpu_memory_utilization": "0.9",
			"num_gpu_blocks": strconv.Itoa(c.KVCacheTokens / prefixBlock),
		},
	})
	cacheInfo.Set(1)
	reg.MustRegister(cacheInfo, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// RequestFailed counts a request that ended with an error, which the
// HTTP side decides (vllm:request_success_total{finished_reason="error"}).
func (m *Metrics) RequestFailed() { m.success.WithLabelValues("error").Inc() }

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// factory builds and registers metrics with the common labels. Counter
// names are given without _total, as vLLM's Python code spells them.
type factory struct {
	reg    prometheus.Registerer
	labels prometheus.Labels
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: f.labels})
	f.reg.MustRegister(g)
	return g
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name + "_total", Help: help, ConstLabels: f.labels})
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: f.labels, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}
