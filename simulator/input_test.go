package simulator

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// TestBadInput checks that bad requests get vLLM's answers and never break
// the server.
func TestBadInput(t *testing.T) {
	o := fastOptions()
	o.MaxBodyBytes = 1 << 10
	_, url := startTest(t, o)
	huge := `{"prompt":"` + strings.Repeat("a ", 1<<10) + `"}`
	cases := []struct {
		name, path, method, body string
		status                   int
		wantType                 string // error.type, "" = no error body check
		wantSub                  string
	}{
		{"invalid json", "/v1/completions", "POST", `{"prompt":"hi",}`, 400, "Bad Request", "JSON decode error"},
		{"empty body", "/v1/chat/completions", "POST", ``, 400, "Bad Request", "Field required"},
		{"json array", "/v1/completions", "POST", `[1,2]`, 400, "Bad Request", "valid dictionary"},
		{"body over the limit", "/v1/completions", "POST", huge, 400, "Bad Request", "too large"},
		{"missing prompt", "/v1/completions", "POST", `{"max_tokens":3}`, 400, "Bad Request", "prompt"},
		{"empty prompt", "/v1/completions", "POST", `{"prompt":""}`, 400, "BadRequestError", "empty"},
		{"prompt of objects", "/v1/completions", "POST", `{"prompt":[{"a":1}]}`, 400, "Bad Request", "prompt"},
		{"negative token id", "/v1/completions", "POST", `{"prompt":[1,-2]}`, 400, "BadRequestError", "vocabulary"},
		{"missing messages", "/v1/chat/completions", "POST", `{"model":"sim-llama"}`, 400, "Bad Request", "messages"},
		{"message without role", "/v1/chat/completions", "POST", `{"messages":[{"content":"hi"}]}`, 400, "Bad Request", "role"},
		{"max_tokens zero", "/v1/completions", "POST", `{"prompt":"hi","max_tokens":0}`, 400, "BadRequestError", "at least 1"},
		{"min_tokens above max_tokens", "/v1/completions", "POST", `{"prompt":"hi","max_tokens":2,"min_tokens":5}`, 400, "BadRequestError", "min_tokens"},
		{"n above 1", "/v1/completions", "POST", `{"prompt":"hi","n":2}`, 400, "BadRequestError", "n=2"},
		{"unknown fields accepted", "/v1/completions", "POST", `{"prompt":"hi","max_tokens":2,"temperature":0,"frobnicate":{"x":[1]}}`, 200, "", ""},
		{"token id lists accepted", "/v1/completions", "POST", `{"prompt":[[1,2],[3]],"max_tokens":2}`, 200, "", ""},
		{"wrong method", "/v1/completions", "GET", ``, 405, "", "Method Not Allowed"},
		{"unknown path", "/v1/moderations", "POST", `{}`, 404, "", "Not Found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var raw bytes.Buffer
			if _, err := raw.ReadFrom(resp.Body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, raw.String())
			}
			if !strings.Contains(raw.String(), tc.wantSub) {
				t.Errorf("body %s does not mention %q", raw.String(), tc.wantSub)
			}
			if tc.wantType == "" {
				return
			}
			var e wire.ErrorBody
			decodeJSON(t, raw.Bytes(), &e)
			if e.Error.Type != tc.wantType || e.Error.Code != tc.status {
				t.Errorf("error %+v, want type %q code %d", e.Error, tc.wantType, tc.status)
			}
		})
	}
	t.Run("still healthy", func(t *testing.T) {
		resp, err := http.Get(url + "/health")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("health after bad input: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}

// TestAPIKey checks vLLM's AuthenticationMiddleware behaviour.
func TestAPIKey(t *testing.T) {
	o := fastOptions()
	o.APIKey = "s3cret"
	_, url := startTest(t, o)
	cases := []struct {
		name, method, path, auth string
		status                   int
		body                     string
	}{
		{"missing key", "POST", "/v1/completions", "", 401, `{"error":"Unauthorized"}`},
		{"wrong key", "POST", "/v1/chat/completions", "Bearer nope", 401, `{"error":"Unauthorized"}`},
		{"models guarded", "GET", "/v1/models", "", 401, `{"error":"Unauthorized"}`},
		{"right key", "POST", "/v1/completions", "Bearer s3cret", 200, ""},
		{"health open", "GET", "/health", "", 200, ""},
		{"metrics open", "GET", "/metrics", "", 200, ""},
		{"tokenize open", "POST", "/tokenize", "", 200, ""},
		{"version open", "GET", "/version", "", 200, `{"version":"0.26.0"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(`{"prompt":"hi","max_tokens":1}`))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b.String())
			}
			if tc.body != "" && b.String() != tc.body {
				t.Errorf("body %s, want %s", b.String(), tc.body)
			}
		})
	}
}
