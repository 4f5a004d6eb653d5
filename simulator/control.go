package simulator

import (
	"encoding/json"
	"net/http"

	"github.com/vllm-prober/vllm-prober/simulator/textgen"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// handleFaults serves GET /sim/faults (the current faults) and POST
// /sim/faults (replace them; absent keys become 0).
func (s *Server) handleFaults(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, err := readLimited(r, 1<<20)
		if err != nil {
			writeError(w, validationError("%v", err))
			return
		}
		var f Faults
		if err := json.Unmarshal(body, &f); err != nil {
			writeError(w, validationError("%v", err))
			return
		}
		if err := f.Validate(); err != nil {
			writeError(w, validationError("%v", err))
			return
		}
		s.SetFaults(f)
		s.log.Info("simulator faults changed", "faults", string(wire.Compact(f)))
	}
	writeJSON(w, http.StatusOK, s.Faults())
}

type tokenizeRequest struct {
	Model            *string         `json:"model"`
	Prompt           *string         `json:"prompt"`
	Messages         []chatMessageIn `json:"messages"`
	ReturnTokenStrs  bool            `json:"return_token_strs"`
	AddSpecialTokens *bool           `json:"add_special_tokens"`
}

// handleTokenize serves POST /tokenize for the prompt and the chat forms.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if e := s.decodeModelRequest(r, &req, &req.Model); e != nil {
		writeError(w, e)
		return
	}
	var text string
	switch {
	case req.Messages != nil:
		t, _, e := renderChat(req.Messages)
		if e != nil {
			writeError(w, e)
			return
		}
		text = t
	case req.Prompt != nil:
		text = *req.Prompt
	default:
		writeError(w, validationError("[{'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}]"))
		return
	}
	ids := s.tok.Encode(text)
	var strs []string
	if req.ReturnTokenStrs {
		strs = textgen.Split(text)
	}
	writeJSON(w, http.StatusOK, struct {
		Count       int      `json:"count"`
		MaxModelLen int      `json:"max_model_len"`
		Tokens      []int    `json:"tokens"`
		TokenStrs   []string `json:"token_strs"`
	}{len(ids), s.o.MaxModelLen, nonNil(ids), strs})
}

// handleDetokenize serves POST /detokenize.
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  *string `json:"model"`
		Tokens []int   `json:"tokens"`
	}
	if e := s.decodeModelRequest(r, &req, &req.Model); e != nil {
		writeError(w, e)
		return
	}
	text, err := s.tok.Decode(req.Tokens)
	if err != nil {
		writeError(w, badRequest("tokens", "%v", err))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Prompt string `json:"prompt"`
	}{text})
}

// decodeModelRequest decodes the request body into req, whose model field
// is *model, and checks that the model is the one served.
func (s *Server) decodeModelRequest(r *http.Request, req any, model **string) *apiError {
	if e := decodeBody(r, s.o.MaxBodyBytes, req); e != nil {
		return e
	}
	return s.checkModel(*model)
}

// checkModel answers vLLM's 404 for a model name that is not served.
func (s *Server) checkModel(m *string) *apiError {
	if m == nil || *m == s.o.Model {
		return nil
	}
	e := &apiError{status: http.StatusNotFound, info: wire.ErrorInfo{
		Message: "The model `" + *m + "` does not exist.", Type: "NotFoundError", Param: strPtr("model"), Code: 404,
	}}
	return e
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}
