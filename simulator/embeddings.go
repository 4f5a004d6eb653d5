package simulator

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/vllm-prober/vllm-prober/simulator/engine"
	"github.com/vllm-prober/vllm-prober/simulator/fault"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// embeddingRequest holds the fields of POST /v1/embeddings the simulator
// acts on.
type embeddingRequest struct {
	Model          *string         `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// handleEmbeddings serves POST /v1/embeddings like a vLLM pooling model:
// each input is a sequence that queues and is admitted like a generation,
// costs its prefill in the engine step that admits it, and finishes there
// without generating a token. Faults apply as to a non-streaming
// generation.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	rc := &recorder{on: s.o.Trace, rec: TraceRecord{RequestID: r.Header.Get("X-Request-Id"), Path: r.URL.Path, Arrival: time.Now()}}
	defer s.finishTrace(rc)
	prompts, base64Format, e := s.embeddingPrompts(r)
	if e != nil {
		rc.rec.Status = e.status
		writeError(w, e)
		return
	}
	c := &call{id: "embd-" + s.randomHex(32), model: s.o.Model, created: time.Now().Unix(), sink: engine.NewSink(), plan: s.faults.Draw(), rc: rc}
	for i, p := range prompts {
		c.seqs = append(c.seqs, &engine.Seq{Choice: i, PromptIDs: p.ids, Pooling: true, Sink: c.sink, Arrival: rc.rec.Arrival})
	}
	rc.rec.ID, rc.rec.PromptTokens, rc.rec.Faults = c.id, c.promptTokens(), c.plan.Kinds()
	if s.refuseByFault(w, r, c.plan, rc) {
		return
	}
	if c.plan.WrongModel {
		c.model = s.o.Model + "-wrong"
	}
	s.eng.Submit(c.seqs...)
	col, ok := s.collect(r, c)
	if !ok || !s.sleepUntil(r, col.last.Add(c.plan.ExtraTTFT)) || !s.applyBodyFault(w, r, c) {
		return
	}
	data := make([]wire.EmbeddingData, len(prompts))
	for i, p := range prompts {
		v := embedding(p.ids, s.o.EmbeddingDim)
		data[i] = wire.EmbeddingData{Index: i, Object: "embedding", Embedding: v}
		if base64Format {
			data[i].Embedding = base64Floats(v)
		}
	}
	body := wire.Compact(wire.EmbeddingResponse{Head: c.head("list"), Data: data,
		Usage: wire.UsageFull{PromptTokens: c.promptTokens(), TotalTokens: c.promptTokens(), PromptTokensDetails: wire.Null}})
	if c.plan.Terminal == fault.KindMalformed {
		body = body[:len(body)/2]
	}
	rc.rec.Status = http.StatusOK
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	rc.event("body", 0, time.Now())
}

// embeddingPrompts validates an embedding request and returns its inputs
// and whether the vectors are wanted in base64.
func (s *Server) embeddingPrompts(r *http.Request) ([]prompt, bool, *apiError) {
	var req embeddingRequest
	if e := s.decodeModelRequest(r, &req, &req.Model); e != nil {
		return nil, false, e
	}
	prompts, e := s.parsePrompts(req.Input, "input")
	if e != nil {
		return nil, false, e
	}
	for _, p := range prompts {
		if len(p.ids) > s.o.MaxModelLen {
			return nil, false, badRequest("input", "This model's maximum context length is %d tokens. However, you requested %d tokens in the input for embedding generation. Please reduce the length of the input.", s.o.MaxModelLen, len(p.ids))
		}
	}
	format := "float"
	if req.EncodingFormat != nil {
		format = *req.EncodingFormat
	}
	if format != "float" && format != "base64" {
		return nil, false, validationError("[{'type': 'literal_error', 'loc': ('body', 'encoding_format'), 'msg': \"Input should be 'float' or 'base64'\", 'input': '%s'}]", pyEscape(format))
	}
	if req.Dimensions != nil && *req.Dimensions != s.o.EmbeddingDim {
		return nil, false, badRequest("dimensions", "Model \"%s\" does not support matryoshka representation, changing output dimensions will lead to poor results.", s.o.Model)
	}
	return prompts, format == "base64", nil
}

// embedding is the unit-length vector of dim float32 values of the token
// ids: deterministic in the ids alone, and finite.
func embedding(ids []int, dim int) []float64 {
	h := fnv.New64a()
	var buf [8]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint64(buf[:], uint64(id))
		h.Write(buf[:])
	}
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(dim)))
	v := make([]float64, dim)
	norm := 0.0
	for i := range v {
		v[i] = rng.NormFloat64()
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	if norm == 0 || math.IsInf(norm, 0) {
		clear(v)
		v[0], norm = 1, 1
	}
	for i := range v {
		// A pooling model's output is float32; the JSON carries its exact value.
		v[i] = float64(float32(v[i] / norm))
	}
	return v
}

// base64Floats encodes v as little-endian float32s, vLLM's base64 format.
func base64Floats(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(b)
}
