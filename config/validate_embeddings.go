package config

import (
	"fmt"
	"strings"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
)

// embeddingsExtraKeys are the body keys of an embeddings request the prober
// sets itself besides model: the text, and float vectors, which
// quality.embedding_dim checks.
var embeddingsExtraKeys = []string{"input", "encoding_format"}

// embeddings checks quality.embedding_dim and, for a probe of api
// embeddings, refuses the keys of generated text: an embeddings request
// generates no tokens, so a TTFT or TPOT objective, a sampling parameter or
// a check of the output could never be judged (docs/design.md,
// "Embeddings probes"). The defaults of finish_reasons and
// min_output_tokens, which only a generation meets, are dropped.
func (v *validator) embeddings(p *Probe, path string) {
	q := &p.Quality
	if p.API != APIEmbeddings {
		if q.EmbeddingDim != 0 {
			v.p.Fail(path+".quality.embedding_dim", "applies only to api embeddings, not %s: remove it, got %d", p.API, q.EmbeddingDim)
		}
		return
	}
	v.atLeast(path+".quality.embedding_dim", q.EmbeddingDim, 0)
	if !v.p.Written(path + ".quality.finish_reasons") {
		q.FinishReasons = nil
	}
	if !v.p.Written(path + ".quality.min_output_tokens") {
		q.MinOutputTokens = 0
	}
	refuse := func(key string, set bool, got string) {
		if set {
			v.p.Fail(path+"."+key, "does not apply to api embeddings, which generates no tokens: remove it, got %s", got)
		}
	}
	refuse("slo.ttft", p.SLO.TTFT != 0, p.SLO.TTFT.String())
	refuse("slo.tpot", p.SLO.TPOT != 0, p.SLO.TPOT.String())
	refuse("slo.ttfa", p.SLO.TTFA != 0, p.SLO.TTFA.String())
	refuse("request.max_tokens", v.p.Written(path+".request.max_tokens"), fmt.Sprint(p.Request.MaxTokens))
	refuse("request.temperature", p.Request.Temperature != 0, fmtFloat(p.Request.Temperature))
	refuse("request.ignore_eos", p.Request.IgnoreEOS, "true")
	refuse("quality.finish_reasons", len(q.FinishReasons) > 0, "["+strings.Join(q.FinishReasons, ", ")+"]")
	refuse("quality.min_output_tokens", q.MinOutputTokens != 0, fmt.Sprint(q.MinOutputTokens))
	refuse("quality.max_output_tokens", q.MaxOutputTokens != 0, fmt.Sprint(q.MaxOutputTokens))
	refuse("quality.regex", q.Regex.Source != "", strictyaml.Quote(q.Regex.Source))
	refuse("quality.json", q.JSON, "true")
	refuse("quality.json_schema", q.JSONSchema != "", strictyaml.Quote(q.JSONSchema))
	q.JSONSchema = "" // refused: not compiled either
	for _, k := range embeddingsExtraKeys {
		if _, ok := p.Request.Extra[k]; ok {
			v.p.Fail(path+".request.extra."+k, "is set by the prober and cannot be overridden, got %s", strictyaml.Quote(k))
		}
	}
	if r := p.Workload.Random; r != nil {
		refuse("workload.random.output_tokens", r.OutputTokens != 0, fmt.Sprint(r.OutputTokens))
	}
	for i, pr := range p.Workload.Prompts {
		key := fmt.Sprintf("workload.prompts[%d]", i)
		refuse(key+".expect.regex", pr.Expect.Regex.Source != "", strictyaml.Quote(pr.Expect.Regex.Source))
		refuse(key+".expect.contains", pr.Expect.Contains != "", strictyaml.Quote(pr.Expect.Contains))
		if pr.Seed != nil {
			refuse(key+".seed", true, fmt.Sprint(*pr.Seed))
		}
	}
}
