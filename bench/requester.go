package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/bench/dataset"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// newRequester returns the probe's Requester set up as vllm bench serve:
// its payload and timing definitions (client.TimingVLLMBench), the
// endpoint, the bearer token, X-Request-Id bench-<8 hex>-<i>, and either
// the random workload of the flags (prompts nil), request i sending its
// item i whichever shard sends it, or the dataset's prompts, request i
// sending prompts[i-1].
func newRequester(o *Options, prompts []dataset.Prompt, env Env) (*idSender, error) {
	p := benchProbe(o)
	items := make([]workload.Item, len(prompts))
	for i, pr := range prompts {
		items[i] = pr.Item(p)
	}
	now := env.Now
	if env.realClock {
		now = nil // time.Now, with receive times
	}
	r, err := client.New(benchTarget(o), p, client.Options{Logger: env.Logger, Now: now,
		Timing: client.TimingVLLMBench, Endpoint: o.Endpoint, Items: items, ByIndex: true, MaxBodyBytes: maxBenchBody})
	if err != nil {
		return nil, err
	}
	return &idSender{Requester: r, prefix: requestIDPrefix()}, nil
}

// idSender numbers requests as vllm bench serve does: a request without an
// X-Request-Id gets prefix followed by Seq-1.
type idSender struct {
	*client.Requester
	prefix string
}

// Do sets the request ID when the caller set none, then sends.
func (s *idSender) Do(ctx context.Context, res *probe.Result) {
	s.DoPrepared(ctx, res, nil)
}

// DoPrepared is Do for a request the Requester prepared (openloop
// prepares while it waits).
func (s *idSender) DoPrepared(ctx context.Context, res *probe.Result, p *client.Prepared) {
	if res.RequestID == "" {
		res.RequestID = s.prefix + strconv.FormatUint(res.Seq-1, 10)
	}
	s.Requester.DoPrepared(ctx, res, p)
}

// benchTarget is the server of the flags: its URL, model and bearer token.
func benchTarget(o *Options) config.Target {
	t := config.Target{Name: hostOf(o.BaseURL), URL: o.BaseURL, Model: o.Model,
		HTTPClientConfig: promconfig.DefaultHTTPClientConfig}
	// vLLM's aiohttp session trusts the proxy environment too.
	t.HTTPClientConfig.ProxyFromEnvironment = true
	if o.APIKey != "" {
		t.HTTPClientConfig.Authorization = &promconfig.Authorization{Type: "Bearer", Credentials: promconfig.Secret(o.APIKey)}
	}
	return t
}

// benchProbe is the contract bench sends and judges by: the random
// workload of the flags, --goodput's SLOs and the daemon's default quality
// checks.
func benchProbe(o *Options) config.Probe {
	p := config.Probe{Name: benchProbeName, API: config.APICompletions, Rate: o.RequestRate, Burstiness: o.Burstiness,
		Timeout: model.Duration(o.Timeout),
		Request: config.Request{MaxTokens: o.RandomOutputLen, IgnoreEOS: o.IgnoreEOS},
		SLO: config.SLO{TTFT: judgeSLO(o.Goodput.HasTTFT, o.Goodput.TTFT), TPOT: judgeSLO(o.Goodput.HasTPOT, o.Goodput.TPOT),
			E2EL: judgeSLO(o.Goodput.HasE2EL, o.Goodput.E2EL)},
		Quality: config.Quality{FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1}}
	if o.chat() {
		p.API = config.APIChat
	}
	if o.DatasetName == datasetRandom {
		p.Workload.Random = &config.RandomWorkload{InputTokens: o.RandomInputLen, OutputTokens: o.RandomOutputLen,
			RangeRatio: o.RandomRangeRatio, Seed: o.Seed, PrefixTokens: o.RandomPrefixLen}
	}
	return p
}

// requestIDPrefix is vLLM's "bench-<8 hex>-".
func requestIDPrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "bench-" + hex.EncodeToString(b[:]) + "-"
}

// discoverModel fills o.Model from the requester (the first id of the
// server's /v1/models) when the flags named none.
func discoverModel(ctx context.Context, o *Options, r *idSender) error {
	if o.Model != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	m, err := r.Model(ctx)
	if err != nil {
		return err
	}
	o.Model = m
	return nil
}

// maxBenchBody bounds one response body. vLLM's client has none; this
// one is far above any real completion, so long outputs do not fail on it.
const maxBenchBody = 1 << 30

// modelsTimeout bounds the GET /v1/models of model discovery.
const modelsTimeout = 30 * time.Second
