package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/fingerprint"
)

// chatMulti streams "ab" as two tokens in one event, then "c" and "d".
var chatMulti = []string{
	`{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`,
	`{"model":"m","choices":[{"index":0,"delta":{"content":"ab"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
	`{"model":"m","choices":[{"index":0,"delta":{"content":"c"}}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`,
	`{"model":"m","choices":[{"index":0,"delta":{"content":"d"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":4}}`,
}

func hashOf(text string) string {
	h := fingerprint.NewHasher(1)
	h.Add(text, 1)
	return h.Sum()
}

// TestRequesterFingerprint: a fingerprint probe's completed request carries
// the hash of its answer's first tokens (counted by continuous usage) and
// its prompt's index, whatever the judge decides; a stream cut short and a
// probe without fingerprint carry none. A prompt's seed is sent as seed.
func TestRequesterFingerprint(t *testing.T) {
	seed := int64(7)
	for _, tt := range []struct {
		name     string
		events   []string
		done     bool
		fp       *config.Fingerprint
		minOut   int
		wantText string // "" = no fingerprint
		wantDisp probe.Disposition
	}{
		{"first token", chatOK, true, &config.Fingerprint{Tokens: 1, Confirm: 3}, 1, "14", probe.Accepted},
		{"shorter answer", chatOK, true, &config.Fingerprint{Tokens: 16, Confirm: 3}, 1, "144", probe.Accepted},
		{"usage counts tokens", chatMulti, true, &config.Fingerprint{Tokens: 3, Confirm: 3}, 1, "abc", probe.Accepted},
		{"event reaching the count is whole", chatMulti, true, &config.Fingerprint{Tokens: 1, Confirm: 3}, 1, "ab", probe.Accepted},
		{"quality failure still fingerprinted", chatOK, true, &config.Fingerprint{Tokens: 2, Confirm: 3}, 5, "144", probe.QualityFailure},
		{"no done", chatOK, false, &config.Fingerprint{Tokens: 2, Confirm: 3}, 1, "", probe.ServerFailure},
		{"no fingerprint", chatOK, true, nil, 1, "", probe.Accepted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c capture
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.record(r)
				writeEvents(w, tt.events, tt.done)
			}))
			defer srv.Close()
			p := rqProbe(config.APIChat)
			p.Fingerprint, p.Quality.MinOutputTokens = tt.fp, tt.minOut
			p.Workload.Prompts = append(p.Workload.Prompts, config.Prompt{Messages: []config.Message{{Role: "user", Content: "2+2?"}}, Seed: &seed})
			r := newTestRequester(t, rqTarget(srv.URL), p, Options{})
			for seq := uint64(1); seq <= 2; seq++ {
				res := doRequest(context.Background(), r, seq)
				if res.Disposition != tt.wantDisp {
					t.Fatalf("request %d: disposition %s (%s), want %s", seq, res.Disposition, res.Error, tt.wantDisp)
				}
				switch fp := res.Fingerprint; {
				case tt.wantText == "" && fp != nil:
					t.Errorf("request %d: fingerprint %+v, want none", seq, *fp)
				case tt.wantText == "":
				case fp == nil:
					t.Errorf("request %d: no fingerprint, want the hash of %q", seq, tt.wantText)
				case fp.Hash != hashOf(tt.wantText) || fp.Prompt != int(seq-1) || fp.Changed:
					t.Errorf("request %d: fingerprint %+v, want prompt %d, hash %s of %q", seq, *fp, seq-1, hashOf(tt.wantText), tt.wantText)
				}
			}
			if _, ok := c.bodies[0]["seed"]; ok {
				t.Errorf("prompt 0 has no seed, body sent %v", c.bodies[0]["seed"])
			}
			if got := c.bodies[1]["seed"]; got != float64(7) {
				t.Errorf("prompt 1 sent seed %v, want 7", got)
			}
		})
	}
}
