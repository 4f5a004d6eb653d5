package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/vllm-prober/vllm-prober/simulator/textgen"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// apiError is an error answered with vLLM's error body before streaming.
type apiError struct {
	status int
	info   wire.ErrorInfo
}

// badRequest is vLLM's VLLMValidationError / ValueError (type BadRequestError).
func badRequest(param, format string, args ...any) *apiError {
	e := &apiError{status: http.StatusBadRequest, info: wire.ErrorInfo{Message: fmt.Sprintf(format, args...), Type: "BadRequestError", Code: 400}}
	if param != "" {
		e.info.Param = strPtr(param)
	}
	return e
}

// validationError is FastAPI's request validation error as vLLM maps it:
// 400 with the reason phrase as type.
func validationError(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, info: wire.ErrorInfo{Message: fmt.Sprintf(format, args...), Type: "Bad Request", Code: 400}}
}

// statusError is an HTTPException-style error: the reason phrase as type.
func statusError(status int, message string) *apiError {
	return &apiError{status: status, info: wire.ErrorInfo{Message: message, Type: http.StatusText(status), Code: status}}
}

func internalError() *apiError {
	return &apiError{status: 500, info: wire.ErrorInfo{Message: "Internal server error", Type: "InternalServerError", Code: 500}}
}

// genRequest holds the fields of completions and chat requests that the
// simulator acts on; every other field is accepted and ignored, as vLLM
// does with unknown fields.
type genRequest struct {
	Model               *string         `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessageIn `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           *int            `json:"min_tokens"`
	IgnoreEOS           *bool           `json:"ignore_eos"`
	Stream              *bool           `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	N                   *int            `json:"n"`
	RequestID           *string         `json:"request_id"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
}

type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

type chatMessageIn struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// decodeBody reads a JSON object into v, answering like vLLM's request
// validation for bad JSON and wrong types.
func decodeBody(r *http.Request, limit int64, v any) *apiError {
	body, err := readLimited(r, limit)
	if err != nil {
		return validationError("%v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return validationError("[{'type': 'missing', 'loc': ('body',), 'msg': 'Field required', 'input': None}]")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return validationError("[{'type': '%s_type', 'loc': ('body', '%s'), 'msg': 'Input should be a valid %s', 'input': %s}]", te.Type.Kind(), te.Field, te.Type.Kind(), te.Value)
		case errors.As(err, &se):
			return validationError("[{'type': 'json_invalid', 'loc': ('body', %d), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': '%s'}}]", se.Offset, pyEscape(se.Error()))
		default:
			return validationError("[{'type': 'model_attributes_type', 'loc': ('body',), 'msg': 'Input should be a valid dictionary or object to extract fields from', 'input': %s}]", pyEscape(err.Error()))
		}
	}
	return nil
}

func pyEscape(s string) string { return strings.ReplaceAll(s, "'", `\'`) }

// readLimited reads the body up to limit bytes.
func readLimited(r *http.Request, limit int64) ([]byte, error) {
	var b bytes.Buffer
	n, err := b.ReadFrom(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, fmt.Errorf("request body too large: more than %d bytes", limit)
		}
		return nil, fmt.Errorf("read request body after %d bytes: %w", n, err)
	}
	return b.Bytes(), nil
}

// prompt is one prompt of a request: its text (when known) and token ids.
type prompt struct {
	text string
	ids  []int
}

// parsePrompts accepts a string, a list of strings, a list of token ids or
// a list of token-id lists in the request field named field ("prompt", or
// "input" for embeddings).
func (s *Server) parsePrompts(raw json.RawMessage, field string) ([]prompt, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, validationError("[{'type': 'missing', 'loc': ('body', '%s'), 'msg': 'Field required'}]", field)
	}
	empty := badRequest(field, "Prompt cannot be empty.")
	var str string
	if json.Unmarshal(raw, &str) == nil {
		if str == "" {
			return nil, empty
		}
		return []prompt{{text: str, ids: s.tok.Encode(str)}}, nil
	}
	var strs []string
	if json.Unmarshal(raw, &strs) == nil && len(strs) > 0 {
		out := make([]prompt, len(strs))
		for i, t := range strs {
			if t == "" {
				return nil, empty
			}
			out[i] = prompt{text: t, ids: s.tok.Encode(t)}
		}
		return out, nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []prompt{{ids: ids}}, checkIDs(ids, field)
	}
	var lists [][]int
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 {
		out := make([]prompt, len(lists))
		for i, l := range lists {
			if len(l) == 0 {
				return nil, empty
			}
			if err := checkIDs(l, field); err != nil {
				return nil, err
			}
			out[i] = prompt{ids: l}
		}
		return out, nil
	}
	return nil, validationError("[{'type': 'union_type', 'loc': ('body', '%s'), 'msg': 'Input should be a valid string, a list of strings, a list of token ids or a list of token id lists'}]", field)
}

func checkIDs(ids []int, field string) *apiError {
	for _, id := range ids {
		if id < 0 || id >= textgen.VocabSize {
			return badRequest(field, "Token id %d is out of vocabulary", id)
		}
	}
	return nil
}

// renderChat applies the stand-in chat template and returns the prompt text
// and the text of the last user message (for the answer rule).
func renderChat(msgs []chatMessageIn) (string, string, *apiError) {
	if len(msgs) == 0 {
		return "", "", validationError("[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}]")
	}
	var b strings.Builder
	var lastUser string
	for i, m := range msgs {
		text, err := contentText(m.Content)
		if err != nil {
			return "", "", validationError("[{'type': 'union_type', 'loc': ('body', 'messages', %d, 'content'), 'msg': '%s'}]", i, pyEscape(err.Error()))
		}
		if m.Role == "" {
			return "", "", validationError("[{'type': 'missing', 'loc': ('body', 'messages', %d, 'role'), 'msg': 'Field required'}]", i)
		}
		fmt.Fprintf(&b, "<|%s|>\n%s\n", m.Role, text)
		if m.Role == "user" {
			lastUser = text
		}
	}
	b.WriteString("<|assistant|>\n")
	return b.String(), lastUser, nil
}

// contentText flattens a message content: a string, null or a list of
// parts whose text parts are joined.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or a list of content parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}
