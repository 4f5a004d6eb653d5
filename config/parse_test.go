package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
)

func TestErrorsAreTyped(t *testing.T) {
	_, err := Parse([]byte(validTarget+strings.Replace(validProbe, "rate: 0.2", "rate: -1", 1)), "c.yml")
	var ce *strictyaml.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *strictyaml.Error", err)
	}
	want := strictyaml.Error{File: "c.yml", Line: 9, Path: "probes[0].rate", Msg: "must be a finite number > 0, got -1"}
	if *ce != want {
		t.Errorf("got %+v, want %+v", *ce, want)
	}
}

func TestParseEdgeCases(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"empty file", "", "c.yml:1: targets: at least one target is required, got none\nc.yml:1: probes: at least one probe is required, got none"},
		{"two documents", validTarget + validProbe + "---\nx: 1\n", "c.yml:11: only one YAML document is allowed"},
		{"nan rate", validTarget + strings.Replace(validProbe, "rate: 0.2", "rate: .nan", 1), "c.yml:9: probes[0].rate: must be a finite number > 0, got NaN"},
		{"inf rate", validTarget + strings.Replace(validProbe, "rate: 0.2", "rate: inf", 1), "c.yml:9: probes[0].rate: must be a finite number > 0, got +Inf"},
		{"non-string key", validTarget + validProbe + "[a]: 1\n", "c.yml:11: keys must be strings, got a list"},
		{"scalar for targets shows its value", "targets: llama\n" + validProbe, "c.yml:1: targets: must be a list, got \"llama\""},
		{"scalar for http_client_config is hidden", "targets: [{name: a, url: 'http://a', http_client_config: 'Bearer s3cr3t'}]\n" + validProbe, "c.yml:1: targets[0].http_client_config: must be a mapping, got <secret>"},
		{"merge of scalar", validTarget + validProbe + "global: {<<: 1}\n", "c.yml:11: global: merge key << needs a mapping, got a scalar"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "c.yml")
			if err == nil || err.Error() != tc.want {
				t.Errorf("got error:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}

func TestErrorListIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(validTarget + "probes:\n")
	for i := range 60 {
		fmt.Fprintf(&b, "  - {name: p%d, api: chat, rate: 0, workload: {random: {input_tokens: 1, output_tokens: 1}}}\n", i)
	}
	_, err := Parse([]byte(b.String()), "c.yml")
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != strictyaml.MaxErrors+1 {
		t.Errorf("%d lines, want %d", len(lines), strictyaml.MaxErrors+1)
	}
	if got, want := lines[0], "c.yml:6: probes[0].rate: must be a finite number > 0, got 0"; got != want {
		t.Errorf("first line %q, want %q", got, want)
	}
	if got, want := lines[len(lines)-1], "c.yml: 10 more errors not shown"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

func TestRequestExtraIsJSON(t *testing.T) {
	tests := []struct {
		name, extra, want, wantErr string
	}{
		{"integer keys become strings", "{logit_bias: {50256: -100}}", `{"logit_bias":{"50256":-100}}`, ""},
		{"nested lists", "{stop: [a, {b: [1, 2.5]}]}", `{"stop":["a",{"b":[1,2.5]}]}`, ""},
		{"infinity cannot be sent", "{top_p: .inf}", "", "c.yml:10: probes[0].request.extra: cannot be sent as JSON: json: unsupported value: +Inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := validTarget + strings.Replace(validProbe, "rate: 0.2", "rate: 0.2\n    request: {extra: "+tc.extra+"}", 1)
			cfg, err := Parse([]byte(doc), "c.yml")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(cfg.Probes[0].Request.Extra)
			if err != nil || string(got) != tc.want {
				t.Errorf("extra as JSON = %s (%v), want %s", got, err, tc.want)
			}
		})
	}
}

// TestChecksLeaveValidConfigs keeps the base-URL, timeout and max_tokens
// checks to their cases: these neighbours of the refused configs load.
func TestChecksLeaveValidConfigs(t *testing.T) {
	prompts := "{prompts: [{messages: [{role: user, content: hi}]}]}"
	tests := []struct{ name, doc string }{
		{"path that only starts like v1", strings.Replace(validTarget, ":8000", ":8000/v1beta", 1) + validProbe},
		{"base URL under a path prefix", strings.Replace(validTarget, ":8000", ":8000/llama/", 1) + validProbe},
		{"timeout equal to slo.e2el", validTarget + validProbe + "    timeout: 20s\n    slo: {e2el: 20s}\n"},
		{"max_tokens with prompts", validTarget + strings.Replace(validProbe, "{random: {input_tokens: 8, output_tokens: 8}}", prompts, 1) + "    request: {max_tokens: 8}\n"},
		{"other request keys with random", validTarget + validProbe + "    request: {temperature: 0.5, ignore_eos: true}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.doc), "c.yml"); err != nil {
				t.Errorf("Parse: %v\n%s", err, tc.doc)
			}
		})
	}
}

// TestRandomMaxTokensThroughMerge refuses request.max_tokens that reaches a
// random workload's probe through a merge key, at the line it is written.
func TestRandomMaxTokensThroughMerge(t *testing.T) {
	doc := validTarget + `probes:
  - name: fixed
    api: chat
    rate: 1
    request: &req {max_tokens: 32, temperature: 0}
    workload: {prompts: [{messages: [{role: user, content: hi}]}]}
  - name: random
    api: chat
    rate: 1
    request: {<<: *req, ignore_eos: true}
    workload: {random: {input_tokens: 8, output_tokens: 8}}
`
	want := `c.yml:9: probes[1].request.max_tokens: is not used with a random workload, whose output_tokens (8) sets each request's limit: remove it, got 32`
	if _, err := Parse([]byte(doc), "c.yml"); err == nil || err.Error() != want {
		t.Errorf("got error:\n%v\nwant:\n%s", err, want)
	}
}
