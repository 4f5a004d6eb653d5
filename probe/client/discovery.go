package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
)

// maxAuxBody bounds the bodies of /v1/models and /tokenize responses.
const maxAuxBody = 1 << 20

// modelSource gives the model a target serves: the configured one, or the
// first id of GET /v1/models, discovered on first use and again after a
// failure or after the server stopped knowing the model.
type modelSource struct {
	fixed  string
	client *http.Client
	base   string
	logger *slog.Logger

	mu      sync.Mutex
	model   string
	failing bool // the last discovery failed; logged once per change
}

// get returns the model name, discovering it when needed.
func (s *modelSource) get(ctx context.Context) (string, error) {
	if s.fixed != "" {
		return s.fixed, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model != "" {
		return s.model, nil
	}
	model, err := FetchModel(ctx, s.client, s.base)
	if err != nil {
		if !s.failing && ctx.Err() == nil {
			s.logger.Warn("model discovery failed", "err", err)
			s.failing = true
		}
		return "", err
	}
	if s.failing {
		s.logger.Warn("model discovery recovered", "model", model)
		s.failing = false
	}
	s.model = model
	return model, nil
}

// known returns the model when it is known without asking the server.
func (s *modelSource) known() (string, bool) {
	if s.fixed != "" {
		return s.fixed, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model, s.model != ""
}

// forget drops a discovered model so the next request looks again (the
// server answered 404: it may now serve another model).
func (s *modelSource) forget(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model == model {
		s.model = ""
	}
}

// FetchModel returns the first model id of GET {base}/v1/models, the
// model a vLLM server serves. It is the one model discovery of the module:
// the requester and the collector's server scraper both use it.
func FetchModel(ctx context.Context, client *http.Client, base string) (string, error) {
	base = strings.TrimRight(base, "/")
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := doJSON(ctx, client, http.MethodGet, base+"/v1/models", nil, &list); err != nil {
		return "", fmt.Errorf("list models: %w", err)
	}
	if len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", errors.New("list models: the server lists no model")
	}
	return list.Data[0].ID, nil
}

// countTokens returns the token count of text on the target's tokenizer
// (POST {base}/tokenize, a vLLM extension).
func countTokens(ctx context.Context, client *http.Client, base, model, text string) (int, error) {
	req := map[string]any{"prompt": text, "add_special_tokens": false}
	if model != "" {
		req["model"] = model
	}
	var resp struct {
		Count  int   `json:"count"`
		Tokens []int `json:"tokens"`
	}
	if err := doJSON(ctx, client, http.MethodPost, base+"/tokenize", req, &resp); err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	if resp.Count == 0 {
		resp.Count = len(resp.Tokens)
	}
	return resp.Count, nil
}

// transportError is a request that got no response at all (refused,
// unresolvable, TLS): the target is unreachable, which says more than the
// call that happened to find out.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// doJSON sends a small JSON request and decodes a bounded JSON answer. A
// request that got no response fails with a *transportError.
func doJSON(ctx context.Context, client *http.Client, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return &transportError{err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAuxBody+1))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("http %d: %s", resp.StatusCode, bodyErrorMessage(b))
	}
	if len(b) > maxAuxBody {
		return errors.New("response body too large")
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}
