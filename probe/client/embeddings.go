package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// An embeddings probe (api: embeddings) posts the workload's text to
// /v1/embeddings without streaming. Nothing is generated, so only the HTTP
// phases and E2EL, the time until the whole response body was read, are
// measured (docs/design.md, "Embeddings probes").

// embeddingsPath is the endpoint of api embeddings.
const embeddingsPath = "/v1/embeddings"

// acceptHeader is what a request of r's probe accepts: the event stream of
// a generation, or the JSON body of an embeddings response.
func (r *Requester) acceptHeader() string {
	if r.probe.API == config.APIEmbeddings {
		return "application/json"
	}
	return "text/event-stream"
}

// embeddingBody renders the body of an embeddings request: the model, the
// item's text as input and float vectors, which quality.embedding_dim can
// check. request.extra (dimensions, truncate_prompt_tokens...) is merged in
// first, so it never overrides them.
func (r *Requester) embeddingBody(model string, it workload.Item) ([]byte, error) {
	b := make(map[string]any, 3+len(r.probe.Request.Extra))
	for k, v := range r.probe.Request.Extra {
		b[k] = v
	}
	b["model"] = model
	b["input"] = it.Prompt
	b["encoding_format"] = "float"
	out, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode request body: %w", err)
	}
	return out, nil
}

// readEmbedding reads a 200 answer of an embeddings request into res: E2EL
// when the body was read in full, the model, usage and what the judge
// checks of the vector. A body that is not an embeddings response is a
// protocol failure; a vector of the wrong length or with values that are
// not finite numbers is left for the embedding_dim check.
func (r *Requester) readEmbedding(ctx context.Context, res *probe.Result, resp *http.Response, m *measurement, item workload.Item) {
	if !hasContentType(res, resp, "application/json") {
		return
	}
	body, err := io.ReadAll(&limitedBody{r: resp.Body, n: r.opts.MaxBodyBytes})
	end := m.clock.stamp()
	if err != nil {
		classifyStreamError(ctx, res, err)
		return
	}
	var e embeddingResponse
	if err := e.decode(body); err != nil {
		res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonProtocol
		res.Error = truncate(err.Error(), maxErrorLen)
		return
	}
	res.E2EL = end.Sub(m.start)
	res.Model = e.Model
	res.EmbeddingDim, res.EmbeddingNotFinite = e.dim, e.notFinite
	if e.Usage == nil {
		res.PromptTokens = item.PromptTokens
		res.Flags = append(res.Flags, flagNoUsage)
		return
	}
	res.UsageFromServer = true
	res.PromptTokens = e.Usage.PromptTokens
}

// embeddingResponse is the part of vLLM's (and OpenAI's) embeddings
// response the prober reads: {"model", "data": [{"index", "object":
// "embedding", "embedding": [...]}], "usage": {"prompt_tokens",
// "total_tokens"}}.
type embeddingResponse struct {
	Model string `json:"model"`
	Data  []struct {
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`

	dim, notFinite int // of the one vector
}

// decode parses body, which must hold one vector (one input was sent) as
// a JSON array; its values are counted, not judged.
func (e *embeddingResponse) decode(body []byte) error {
	if err := json.Unmarshal(body, e); err != nil {
		return fmt.Errorf("malformed embeddings response: %w", err)
	}
	if len(e.Data) != 1 {
		return fmt.Errorf("malformed embeddings response: %d vectors for one input", len(e.Data))
	}
	raw := bytes.TrimSpace(e.Data[0].Embedding)
	if len(raw) == 0 || raw[0] != '[' {
		return errors.New("malformed embeddings response: embedding is not an array")
	}
	var values []json.RawMessage
	if err := json.Unmarshal(raw, &values); err != nil {
		return fmt.Errorf("malformed embeddings response: embedding: %w", err)
	}
	e.dim = len(values)
	for _, v := range values {
		if !finiteNumber(v) {
			e.notFinite++
		}
	}
	return nil
}

// finiteNumber reports whether v is a JSON number that fits a float64.
// JSON has no NaN or Inf: a value that is not finite arrives as null, a
// string ("NaN") or a number past the range, which parses as ±Inf.
func finiteNumber(v json.RawMessage) bool {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return err == nil && !math.IsInf(f, 0)
}
