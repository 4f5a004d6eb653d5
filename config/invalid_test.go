package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// invalidCases lists every testdata/invalid-*.yml file with the exact
// error text it must produce.
var invalidCases = []struct {
	file string
	want []string
}{
	{
		file: "invalid-allow-regex.yml",
		want: []string{
			`testdata/invalid-allow-regex.yml:2: global.server_metrics.allow: invalid regular expression: missing closing ), got "vllm:(.*"`,
		},
	},
	{
		file: "invalid-discovery.yml",
		want: []string{
			`testdata/invalid-discovery.yml:3: targets[0].discovery: set exactly one of dns, file_sd and http_sd (0 set)`,
			`testdata/invalid-discovery.yml:5: targets[1].discovery: set exactly one of dns, file_sd and http_sd (2 set)`,
			`testdata/invalid-discovery.yml:11: targets[2].discovery.dns.names: at least one name is required`,
			`testdata/invalid-discovery.yml:15: targets[3].discovery.dns.port: 0 is not a port from 1 to 65535 (type A records carry no port)`,
			`testdata/invalid-discovery.yml:18: targets[4].discovery.dns.type: "CNAME" is not one of A, AAAA and SRV`,
			`testdata/invalid-discovery.yml:21: targets[5].discovery.file_sd.files: at least one file or glob is required`,
			`testdata/invalid-discovery.yml:24: targets[6].discovery.http_sd.url: "ftp://sd.example/targets": the scheme must be http or https`,
			`testdata/invalid-discovery.yml:29: targets[7].discovery.http_sd.refresh: must be > 0, got 0s`,
		},
	},
	{
		file: "invalid-fleet-keys.yml",
		want: []string{
			`testdata/invalid-fleet-keys.yml:2: targets[0]: needs url, discovery or both, got neither`,
			`testdata/invalid-fleet-keys.yml:6: targets[1].scheme: is used only with discovery: add discovery or remove it`,
			`testdata/invalid-fleet-keys.yml:7: targets[1].max_replicas: is used only with discovery: add discovery or remove it`,
			`testdata/invalid-fleet-keys.yml:11: targets[2].scheme: must be one of http, https, got "grpc"`,
			`testdata/invalid-fleet-keys.yml:12: targets[2].path_prefix: must start with / and hold no query or fragment (or be "" for none), got "vllm"`,
			`testdata/invalid-fleet-keys.yml:13: targets[2].max_replicas: must be >= 1, got 0`,
		},
	},
	{
		file: "invalid-merge-cycle.yml",
		want: []string{
			`testdata/invalid-merge-cycle.yml:6: probes[0]: merge key << refers to a mapping that contains it`,
		},
	},
	{
		file: "invalid-histograms.yml",
		want: []string{
			`testdata/invalid-histograms.yml:2: global.histograms[1]: must be one of ttft, itl, tpot, e2el, ttfa, phases, schedule_lag, server, got "latency"`,
			`testdata/invalid-histograms.yml:10: probes[0].histograms[2]: histogram listed twice, got "e2el"`,
			`testdata/invalid-histograms.yml:17: probes[1].histograms: must name at least one of ttft, itl, tpot, e2el, ttfa, phases, schedule_lag, server (counters are always exported), got []`,
		},
	},
	{
		file: "invalid-tool-call.yml",
		want: []string{
			`testdata/invalid-tool-call.yml:9: probes[0].quality.tool_call: needs api chat (tool calls are a chat feature), got api "completions"`,
			`testdata/invalid-tool-call.yml:18: probes[1].quality.tool_call.name: must name the function the answer must call, got ""`,
			`testdata/invalid-tool-call.yml:19: probes[1].quality.tool_call.arguments_schema: cannot read file: no such file or directory, got "missing.schema.json"`,
			`testdata/invalid-tool-call.yml:28: probes[2].quality.tool_call.arguments_schema: invalid JSON Schema: "file://bad.schema.json#" is not valid against metaschema: jsonschema validation failed with 'https://json-schema.org/draft/2020-12/schema#' - at '': 'allOf' failed - at '/type': 'anyOf' failed - at '/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string' - at '/type': got number, want array, got "bad.schema.json"`,
			`testdata/invalid-tool-call.yml:36: probes[3].quality.tool_call: needs the function offered in request.extra.tools ([{type: function, function: {name: get_weather, ...}}]), got none`,
			`testdata/invalid-tool-call.yml:50: probes[4].quality.tool_call.name: must be a function of request.extra.tools (get_time, get_wether), got "get_weather"`,
		},
	},
	{
		file: "invalid-ttfa.yml",
		want: []string{
			`testdata/invalid-ttfa.yml:10: probes[0].slo.ttfa: must be a duration such as 30s or 1m30s, got "soon"`,
		},
	},
	{
		file: "invalid-classic-buckets.yml",
		want: []string{
			`testdata/invalid-classic-buckets.yml:8: probes[0].classic_buckets: must be true or false, got "sometimes"`,
		},
	},
	{
		file: "invalid-api.yml",
		want: []string{
			`testdata/invalid-api.yml:6: probes[0].api: must be one of chat, completions, embeddings, got "responses"`,
		},
	},
	{
		file: "invalid-embeddings.yml",
		want: []string{
			`testdata/invalid-embeddings.yml:9: probes[0].request.max_tokens: does not apply to api embeddings, which generates no tokens: remove it, got 16`,
			`testdata/invalid-embeddings.yml:10: probes[0].request.temperature: does not apply to api embeddings, which generates no tokens: remove it, got 0.7`,
			`testdata/invalid-embeddings.yml:11: probes[0].request.ignore_eos: does not apply to api embeddings, which generates no tokens: remove it, got true`,
			`testdata/invalid-embeddings.yml:12: probes[0].request.extra.encoding_format: is set by the prober and cannot be overridden, got "encoding_format"`,
			`testdata/invalid-embeddings.yml:14: probes[0].workload.random.output_tokens: does not apply to api embeddings, which generates no tokens: remove it, got 8`,
			`testdata/invalid-embeddings.yml:16: probes[0].slo.ttft: does not apply to api embeddings, which generates no tokens: remove it, got 1s`,
			`testdata/invalid-embeddings.yml:17: probes[0].slo.tpot: does not apply to api embeddings, which generates no tokens: remove it, got 50ms`,
			`testdata/invalid-embeddings.yml:18: probes[0].slo.ttfa: does not apply to api embeddings, which generates no tokens: remove it, got 2s`,
			`testdata/invalid-embeddings.yml:20: probes[0].quality.embedding_dim: must be >= 0, got -1`,
			`testdata/invalid-embeddings.yml:21: probes[0].quality.finish_reasons: does not apply to api embeddings, which generates no tokens: remove it, got [stop]`,
			`testdata/invalid-embeddings.yml:22: probes[0].quality.min_output_tokens: does not apply to api embeddings, which generates no tokens: remove it, got 1`,
			`testdata/invalid-embeddings.yml:23: probes[0].quality.max_output_tokens: does not apply to api embeddings, which generates no tokens: remove it, got 9`,
			`testdata/invalid-embeddings.yml:24: probes[0].quality.regex: does not apply to api embeddings, which generates no tokens: remove it, got "^x"`,
			`testdata/invalid-embeddings.yml:25: probes[0].quality.json: does not apply to api embeddings, which generates no tokens: remove it, got true`,
			`testdata/invalid-embeddings.yml:26: probes[0].quality.json_schema: does not apply to api embeddings, which generates no tokens: remove it, got "missing.schema.json"`,
			`testdata/invalid-embeddings.yml:32: probes[1].workload.prompts[0].prompt: api embeddings needs a non-empty prompt, got ""`,
			`testdata/invalid-embeddings.yml:32: probes[1].workload.prompts[0].messages: api embeddings takes prompt, not messages, got 1 messages`,
			`testdata/invalid-embeddings.yml:34: probes[1].workload.prompts[1].expect.regex: does not apply to api embeddings, which generates no tokens: remove it, got "P.*"`,
			`testdata/invalid-embeddings.yml:34: probes[1].workload.prompts[1].expect.contains: does not apply to api embeddings, which generates no tokens: remove it, got "Paris"`,
			`testdata/invalid-embeddings.yml:35: probes[1].workload.prompts[1].seed: does not apply to api embeddings, which generates no tokens: remove it, got 7`,
			`testdata/invalid-embeddings.yml:42: probes[2].quality.embedding_dim: applies only to api embeddings, not chat: remove it, got 384`,
		},
	},
	{
		file: "invalid-bad-duration.yml",
		want: []string{
			`testdata/invalid-bad-duration.yml:8: probes[0].timeout: must be a duration such as 30s or 1m30s, got "30 seconds"`,
		},
	},
	{
		file: "invalid-bad-regex.yml",
		want: []string{
			`testdata/invalid-bad-regex.yml:8: probes[0].quality.regex: invalid regular expression: missing closing ), got "(a"`,
		},
	},
	{
		file: "invalid-bad-url.yml",
		want: []string{
			`testdata/invalid-bad-url.yml:3: targets[0].url: must be a valid URL, got "http://[::1"`,
		},
	},
	{
		file: "invalid-burstiness-text.yml",
		want: []string{
			`testdata/invalid-burstiness-text.yml:8: probes[0].burstiness: must be a number, got "infinite"`,
		},
	},
	{
		file: "invalid-burstiness.yml",
		want: []string{
			`testdata/invalid-burstiness.yml:8: probes[0].burstiness: must be > 0 (or inf for constant gaps), got 0`,
		},
	},
	{
		file: "invalid-chat-prompt.yml",
		want: []string{
			`testdata/invalid-chat-prompt.yml:10: probes[0].workload.prompts[0].messages: api chat needs messages, got none`,
			`testdata/invalid-chat-prompt.yml:10: probes[0].workload.prompts[0].prompt: api chat takes messages, not prompt, got "What is 12*12?"`,
		},
	},
	{
		file: "invalid-completions-messages.yml",
		want: []string{
			`testdata/invalid-completions-messages.yml:10: probes[0].workload.prompts[0].prompt: api completions needs a non-empty prompt, got ""`,
			`testdata/invalid-completions-messages.yml:10: probes[0].workload.prompts[0].messages: api completions takes prompt, not messages, got 1 messages`,
		},
	},
	{
		file: "invalid-duplicate-key.yml",
		want: []string{
			`testdata/invalid-duplicate-key.yml:8: probes[0].rate: duplicate key, first defined at line 7`,
		},
	},
	{
		file: "invalid-duplicate-probe.yml",
		want: []string{
			`testdata/invalid-duplicate-probe.yml:11: probes[1].name: duplicate name, first used at line 5, got "chat-short"`,
		},
	},
	{
		file: "invalid-duplicate-target.yml",
		want: []string{
			`testdata/invalid-duplicate-target.yml:4: targets[1].name: duplicate name, first used at line 2, got "llama-8b"`,
		},
	},
	{
		file: "invalid-empty-role.yml",
		want: []string{
			`testdata/invalid-empty-role.yml:10: probes[0].workload.prompts[0].messages[0].role: must not be empty, got ""`,
		},
	},
	{
		file: "invalid-fingerprint.yml",
		want: []string{
			`testdata/invalid-fingerprint.yml:8: probes[0].request.temperature: must be 0 with fingerprint, whose answers must be deterministic, got 0.5`,
			`testdata/invalid-fingerprint.yml:10: probes[0].workload.random.prefix_tokens: must be >= 0, got -1`,
			`testdata/invalid-fingerprint.yml:11: probes[0].fingerprint: needs a prompts workload, whose prompts repeat, got a random workload`,
			`testdata/invalid-fingerprint.yml:11: probes[0].fingerprint.tokens: must be >= 1, got 0`,
			`testdata/invalid-fingerprint.yml:19: probes[1].workload.prompts[0].seed: conflicts with request.extra.seed: set the seed in one place, got 7`,
			`testdata/invalid-fingerprint.yml:21: probes[1].fingerprint.confirm: must be >= 1, got 0`,
		},
	},
	{
		file: "invalid-extra-reserved.yml",
		want: []string{
			`testdata/invalid-extra-reserved.yml:8: probes[0].request.extra.stream: is set by the prober and cannot be overridden, got "stream"`,
		},
	},
	{
		file: "invalid-http-bearer.yml",
		want: []string{
			`testdata/invalid-http-bearer.yml:5: targets[0].http_client_config.bearer_token: inline secrets are not allowed: put the value in a file and name it with bearer_token_file`,
		},
	},
	{
		file: "invalid-http-client-config.yml",
		want: []string{
			`testdata/invalid-http-client-config.yml:6: targets[0].http_client_config.authorization.credentials: inline secrets are not allowed: put the value in a file and name it with credentials_file`,
		},
	},
	{
		file: "invalid-http-proxy-url.yml",
		want: []string{
			`testdata/invalid-http-proxy-url.yml:5: targets[0].http_client_config.proxy_url: invalid URL: invalid character " " in host name, got "http://xxxxx@proxy host:3128"`,
		},
	},
	{
		file: "invalid-http-secret-type.yml",
		want: []string{
			`testdata/invalid-http-secret-type.yml:7: targets[0].http_client_config.basic_auth.password: must be a string, got a list`,
		},
	},
	{
		file: "invalid-http-tls-version.yml",
		want: []string{
			`testdata/invalid-http-tls-version.yml:5: targets[0].http_client_config.tls_config.min_version: unknown TLS version: TLS14, got "TLS14"`,
		},
	},
	{
		file: "invalid-http-unknown-key.yml",
		want: []string{
			`testdata/invalid-http-unknown-key.yml:6: targets[0].http_client_config.tls_config: unknown field "insecure_skip_verfy" (did you mean "insecure_skip_verify"?)`,
		},
	},
	{
		file: "invalid-many.yml",
		want: []string{
			`testdata/invalid-many.yml:4: probes[0].rate: must be a finite number > 0, got 0`,
			`testdata/invalid-many.yml:6: probes[0].objective: must be between 0 and 1 (exclusive), got 2`,
			`testdata/invalid-many.yml:9: targets[0].url: must be an absolute http:// or https:// URL, got "ftp://127.0.0.1"`,
			`testdata/invalid-many.yml:11: global.history_limit: must be >= 1, got 0`,
		},
	},
	{
		file: "invalid-max-in-flight.yml",
		want: []string{
			`testdata/invalid-max-in-flight.yml:8: probes[0].max_in_flight: must be >= 1, got 0`,
		},
	},
	{
		file: "invalid-max-output-tokens.yml",
		want: []string{
			`testdata/invalid-max-output-tokens.yml:8: probes[0].quality.max_output_tokens: must be >= min_output_tokens (10) when set, got 5`,
		},
	},
	{
		file: "invalid-metrics-path.yml",
		want: []string{
			`testdata/invalid-metrics-path.yml:4: targets[0].metrics_path: must start with / (or be "" to disable scraping), got "metrics"`,
		},
	},
	{
		file: "invalid-missing-dataset.yml",
		want: []string{
			`testdata/invalid-missing-dataset.yml:9: probes[0].workload.file: cannot read file: no such file or directory, got "missing.jsonl"`,
		},
	},
	{
		file: "invalid-missing-schema.yml",
		want: []string{
			`testdata/invalid-missing-schema.yml:8: probes[0].quality.json_schema: cannot read file: no such file or directory, got "missing.schema.json"`,
		},
	},
	{
		file: "invalid-negative-rate.yml",
		want: []string{
			`testdata/invalid-negative-rate.yml:7: probes[0].rate: must be a finite number > 0, got -1`,
		},
	},
	{
		file: "invalid-negative-slo.yml",
		want: []string{
			`testdata/invalid-negative-slo.yml:8: probes[0].slo.ttft: must be a duration such as 30s or 1m30s, got "-1s"`,
		},
	},
	{
		file: "invalid-no-targets.yml",
		want: []string{
			`testdata/invalid-no-targets.yml:1: targets: at least one target is required, got none`,
		},
	},
	{
		file: "invalid-no-workload.yml",
		want: []string{
			`testdata/invalid-no-workload.yml:5: probes[0].workload: exactly one of random, prompts, file must be set, got none`,
		},
	},
	{
		file: "invalid-not-mapping.yml",
		want: []string{
			`testdata/invalid-not-mapping.yml:1: the file must be a mapping, got a list`,
		},
	},
	{
		file: "invalid-objective-high.yml",
		want: []string{
			`testdata/invalid-objective-high.yml:8: probes[0].objective: must be between 0 and 1 (exclusive), got 1.5`,
		},
	},
	{
		file: "invalid-objective-zero.yml",
		want: []string{
			`testdata/invalid-objective-zero.yml:8: probes[0].objective: must be between 0 and 1 (exclusive), got 0`,
		},
	},
	{
		file: "invalid-random-workload.yml",
		want: []string{
			`testdata/invalid-random-workload.yml:10: probes[0].workload.random.input_tokens: must be >= 1, got 0`,
			`testdata/invalid-random-workload.yml:12: probes[0].workload.random.range_ratio: must be >= 0 and < 1, got 1`,
		},
	},
	{
		file: "invalid-record-text.yml",
		want: []string{
			`testdata/invalid-record-text.yml:2: global.ledger.record_text: must be one of none, failures, all, got "sometimes"`,
		},
	},
	{
		file: "invalid-relative-url.yml",
		want: []string{
			`testdata/invalid-relative-url.yml:3: targets[0].url: must be an absolute http:// or https:// URL, got "/v1"`,
		},
	},
	{
		file: "invalid-schema.yml",
		want: []string{
			`testdata/invalid-schema.yml:8: probes[0].quality.json_schema: invalid JSON Schema: "file://bad.schema.json#" is not valid against metaschema: jsonschema validation failed with 'https://json-schema.org/draft/2020-12/schema#' - at '': 'allOf' failed - at '/type': 'anyOf' failed - at '/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string' - at '/type': got number, want array, got "bad.schema.json"`,
		},
	},
	{
		file: "invalid-scrape-timeout.yml",
		want: []string{
			`testdata/invalid-scrape-timeout.yml:2: global.server_metrics.timeout: must be <= interval (15s), got 20s`,
		},
	},
	{
		file: "invalid-two-workloads.yml",
		want: []string{
			`testdata/invalid-two-workloads.yml:8: probes[0].workload: exactly one of random, prompts, file must be set, got random, file`,
		},
	},
	{
		file: "invalid-unknown-key.yml",
		want: []string{
			`testdata/invalid-unknown-key.yml:8: probes[0]: unknown field "rtae" (did you mean "rate"?)`,
		},
	},
	{
		file: "invalid-unknown-probe-ref.yml",
		want: []string{
			`testdata/invalid-unknown-probe-ref.yml:4: targets[0].probes[1]: no probe with this name, got "chat-lng"`,
		},
	},
	{
		file: "invalid-unsafe-name.yml",
		want: []string{
			`testdata/invalid-unsafe-name.yml:2: targets[0].name: must match ^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$, got "llama 8b"`,
		},
	},
	{
		file: "invalid-url-credentials.yml",
		want: []string{
			`testdata/invalid-url-credentials.yml:3: targets[0].url: must not contain credentials (use http_client_config), got "http://xxxxx@127.0.0.1:8000"`,
		},
	},
	{
		file: "invalid-url-token-user.yml",
		want: []string{
			`testdata/invalid-url-token-user.yml:3: targets[0].url: must not contain credentials (use http_client_config), got "http://xxxxx@127.0.0.1:8000"`,
			`testdata/invalid-url-token-user.yml:5: targets[1].url: must not have a query or fragment, got "http://127.0.0.1:8001/?api_key=xxxxx"`,
		},
	},
	{
		file: "invalid-wrong-type.yml",
		want: []string{
			`testdata/invalid-wrong-type.yml:8: probes[0].max_in_flight: must be an integer, got "many"`,
		},
	},
	{
		file: "invalid-yaml-syntax.yml",
		want: []string{
			`testdata/invalid-yaml-syntax.yml:6: invalid YAML: key "api" is indented 3 spaces, which lines up with nothing above it: indent it 4 spaces to align it with "name" (line 5), or 0 spaces to align it with "probes" (line 4)`,
		},
	},
	{
		file: "invalid-zero-rate.yml",
		want: []string{
			`testdata/invalid-zero-rate.yml:7: probes[0].rate: must be a finite number > 0, got 0`,
		},
	},
	{
		file: "invalid-schema-syntax.yml",
		want: []string{
			`testdata/invalid-schema-syntax.yml:8: probes[0].quality.json_schema: invalid JSON Schema: failing loading "file://truncated.schema.json": unexpected EOF, got "truncated.schema.json"`,
		},
	},
	{
		file: "invalid-list-types.yml",
		want: []string{
			`testdata/invalid-list-types.yml:2: targets: must be a list, got a mapping`,
			`testdata/invalid-list-types.yml:5: probes[0]: must be a mapping, got "chat-short"`,
			`testdata/invalid-list-types.yml:9: probes[1].quality.finish_reasons: must be a list, got "stop"`,
		},
	},
	{
		file: "invalid-http-secret-mapping.yml",
		want: []string{
			`testdata/invalid-http-secret-mapping.yml:5: targets[0].http_client_config.authorization.credentials: must be a string, got a mapping`,
			`testdata/invalid-http-secret-mapping.yml:7: targets[0].http_client_config.http_headers.X-Api-Key.secrets[0]: inline secrets are not allowed: put the value in a file and name it with a *_file key`,
			`testdata/invalid-http-secret-mapping.yml:7: targets[0].http_client_config.http_headers.X-Api-Key: unknown field "file" (did you mean "files"?)`,
		},
	},
	{
		file: "invalid-unknown-section.yml",
		want: []string{
			`testdata/invalid-unknown-section.yml:1: unknown field "alerting"`,
		},
	},
	{
		file: "invalid-url-v1.yml",
		want: []string{
			`testdata/invalid-url-v1.yml:3: targets[0].url: must be the server's base URL: the prober appends /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models itself; use "http://127.0.0.1:8000", got "http://127.0.0.1:8000/v1"`,
			`testdata/invalid-url-v1.yml:5: targets[1].url: must be the server's base URL: the prober appends /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models itself; use "http://127.0.0.1:8000", got "http://127.0.0.1:8000/v1/"`,
			`testdata/invalid-url-v1.yml:7: targets[2].url: must be the server's base URL: the prober appends /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models itself; use "https://vllm.example.internal/llama", got "https://vllm.example.internal/llama/v1/chat/completions"`,
			`testdata/invalid-url-v1.yml:9: targets[3].url: must be the server's base URL: the prober appends /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models itself; use "http://127.0.0.1:8000", got "http://127.0.0.1:8000/v1/completions"`,
			`testdata/invalid-url-v1.yml:11: targets[4].url: must be the server's base URL: the prober appends /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models itself; use "http://127.0.0.1:8000", got "http://127.0.0.1:8000/v1/models/"`,
			`testdata/invalid-url-v1.yml:13: targets[5].url: must be the server's base URL: the prober appends /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models itself; use "http://127.0.0.1:8000", got "http://127.0.0.1:8000/v1/embeddings"`,
		},
	},
	{
		file: "invalid-timeout-below-e2el.yml",
		want: []string{
			`testdata/invalid-timeout-below-e2el.yml:8: probes[0].timeout: must be >= slo.e2el (20s), or the E2EL objective can never be judged: raise timeout or lower slo.e2el, got 10s`,
			`testdata/invalid-timeout-below-e2el.yml:13: probes[1].timeout: must be >= slo.e2el (1m), or the E2EL objective can never be judged: raise timeout or lower slo.e2el, got 30s`,
		},
	},
	{
		file: "invalid-random-max-tokens.yml",
		want: []string{
			`testdata/invalid-random-max-tokens.yml:10: probes[0].request.max_tokens: is not used with a random workload, whose output_tokens (64) sets each request's limit: remove it, got 128`,
		},
	},
	{
		file: "invalid-fractional-duration.yml",
		want: []string{
			`testdata/invalid-fractional-duration.yml:2: global.server_metrics.interval: must be a duration such as 30s or 1m30s, without fractions: write 36h, got "1.5d"`,
			`testdata/invalid-fractional-duration.yml:2: global.server_metrics.timeout: must be a duration such as 30s or 1m30s, got "0.0005s"`,
			`testdata/invalid-fractional-duration.yml:10: probes[0].timeout: must be a duration such as 30s or 1m30s, without fractions: write 1500ms, got "1.5s"`,
			`testdata/invalid-fractional-duration.yml:15: probes[0].slo.ttft: must be a duration such as 30s or 1m30s, without fractions: write 30s, got "0.5m"`,
			`testdata/invalid-fractional-duration.yml:16: probes[0].slo.tpot: must be a duration such as 30s or 1m30s, without fractions: write 250ms, got ".25s"`,
			`testdata/invalid-fractional-duration.yml:17: probes[0].slo.e2el: must be a duration such as 30s or 1m30s, without fractions: write 150m, got "2.5h"`,
			`testdata/invalid-fractional-duration.yml:21: probes[1].timeout: must be a duration such as 30s or 1m30s, without fractions: write 90500ms, got "1m30.5s"`,
		},
	},
	{
		file: "invalid-indent-under-scalar.yml",
		want: []string{
			`testdata/invalid-indent-under-scalar.yml:7: invalid YAML: key "rate" is indented deeper than "api" (line 6), which already has the value "chat" and cannot hold keys: indent it 4 spaces to align it with "api"`,
		},
	},
	{
		file: "invalid-indent-list-item.yml",
		want: []string{
			`testdata/invalid-indent-list-item.yml:11: invalid YAML: list item is indented 6 spaces, which lines up with nothing above it: indent it 8 spaces to align it with the list item (line 10), or 2 spaces to align it with the list item (line 5)`,
		},
	},
	{
		file: "invalid-indent-top-level.yml",
		want: []string{
			`testdata/invalid-indent-top-level.yml:6: invalid YAML: key "probes" is indented 2 spaces, which lines up with nothing above it: indent it 4 spaces to align it with "url" (line 4), or 0 spaces to align it with "targets" (line 2)`,
		},
	},
	{
		file: "invalid-indent-to-parent.yml",
		want: []string{
			`testdata/invalid-indent-to-parent.yml:4: global: unknown field "max_files": it is a key of "ledger" (line 2), indent it deeper to put it under "ledger"`,
			`testdata/invalid-indent-to-parent.yml:14: probes[0]: unknown field "e2el": it is a key of "slo" (line 12), indent it deeper to put it under "slo"`,
			`testdata/invalid-indent-to-parent.yml:17: probes[0].workload: unknown field "input_tokens": it is a key of "random" (line 16), indent it deeper to put it under "random"`,
			`testdata/invalid-indent-to-parent.yml:18: probes[0].workload: unknown field "output_tokens": it is a key of "random" (line 16), indent it deeper to put it under "random"`,
		},
	},
	{
		file: "invalid-indent-into-child.yml",
		want: []string{
			`testdata/invalid-indent-into-child.yml:7: probes[0].api: must be a string, got a mapping: "rate" (line 7) is a key of probes[0], indent it less to align it with "api"`,
			`testdata/invalid-indent-into-child.yml:9: probes[0].timeout: must be a duration such as 30s or 1m30s, got a mapping: "max_in_flight" (line 9) is a key of probes[0], indent it less to align it with "timeout"`,
			`testdata/invalid-indent-into-child.yml:15: probes[0].slo: unknown field "objective": it is a key of probes[0], indent it less to align it with "slo" (line 13)`,
			`testdata/invalid-indent-into-child.yml:18: probes[0].quality: unknown field "global": it is a key of the top level, indent it less to align it with "probes" (line 4)`,
		},
	},
	{
		file: "invalid-http-secret-shapes.yml",
		want: []string{
			`testdata/invalid-http-secret-shapes.yml:5: targets[0].http_client_config.authorization: must be a mapping, got <secret>`,
			`testdata/invalid-http-secret-shapes.yml:7: targets[0].http_client_config.http_headers.X-Api-Key.secrets: must be a list, got <secret>`,
			`testdata/invalid-http-secret-shapes.yml:8: targets[0].http_client_config.proxy_connect_header: must be a mapping, got <secret>`,
			`testdata/invalid-http-secret-shapes.yml:9: targets[0].http_client_config.tls_config.server_name: must be a string, got a list`,
			`testdata/invalid-http-secret-shapes.yml:9: targets[0].http_client_config.tls_config.insecure_skip_verify: must be true or false, got "maybe"`,
		},
	},
}

func TestLoadInvalid(t *testing.T) {
	for _, tc := range invalidCases {
		t.Run(tc.file, func(t *testing.T) {
			cfg, err := Load(filepath.Join("testdata", tc.file))
			if err == nil {
				t.Fatalf("Load succeeded, want error:\n%s", strings.Join(tc.want, "\n"))
			}
			if cfg != nil {
				t.Errorf("Load returned a config with its error")
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("error text:\ngot:\n%s\nwant:\n%s", got, want)
			}
			for _, secret := range []string{"s3cr3t", "hunter2"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error text shows the secret %q: %s", secret, err)
				}
			}
		})
	}
}

// TestInvalidCasesCoverTestdata keeps the table and the files in step: a
// file without a case would never be checked.
func TestInvalidCasesCoverTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid-*.yml")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, tc := range invalidCases {
		listed[tc.file] = true
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s has no case in invalidCases", f)
		}
	}
	if len(files) < 24 {
		t.Errorf("only %d invalid-*.yml files, want at least 24", len(files))
	}
}
