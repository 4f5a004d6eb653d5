package config

import (
	"strings"
	"testing"
)

// TestIndentationErrors covers mis-indented keys beyond the testdata
// files: each error names the offending line and, where the indentation
// is the problem, where the key belongs.
func TestIndentationErrors(t *testing.T) {
	const head = validTarget + "probes:\n  - name: x\n    api: chat\n    rate: 1\n"
	tests := []struct {
		name, doc, want string
	}{
		{
			"over-indented under the scalar of a list item",
			validTarget + "probes:\n  - name: x\n     api: chat\n",
			`c.yml:7: invalid YAML: key "api" is indented deeper than "name" (line 6), which already has the value "x" and cannot hold keys: indent it 4 spaces to align it with "name"`,
		},
		{
			"over-indented in a nested mapping",
			head + "    slo:\n      ttft: 1s\n        tpot: 5ms\n",
			`c.yml:11: invalid YAML: key "tpot" is indented deeper than "ttft" (line 10), which already has the value "1s" and cannot hold keys: indent it 6 spaces to align it with "ttft"`,
		},
		{
			"under-indented by one inside a list item",
			validTarget + "probes:\n  - name: x\n    api: chat\n   rate: 1\n",
			`c.yml:8: invalid YAML: key "rate" is indented 3 spaces, which lines up with nothing above it: indent it 4 spaces to align it with "api" (line 7), or 0 spaces to align it with "probes" (line 5)`,
		},
		{
			"top-level key after a list, indented by one",
			head + "    workload: {random: {input_tokens: 1, output_tokens: 1}}\n global:\n  history_limit: 3\n",
			`c.yml:10: invalid YAML: key "global" is indented 1 space, which lines up with nothing above it: indent it 4 spaces to align it with "workload" (line 9), or 0 spaces to align it with "probes" (line 5)`,
		},
		{
			"between two nested levels",
			"global:\n  ledger:\n      path: x\n    max_files: 3\n" + validTarget,
			`c.yml:4: invalid YAML: key "max_files" is indented 4 spaces, which lines up with nothing above it: indent it 6 spaces to align it with "path" (line 3), or 2 spaces to align it with "ledger" (line 2)`,
		},
		{
			"block scalar lines and comments are not structure",
			strings.Replace(head, "chat", "completions", 1) + "    workload:\n      prompts:\n        - prompt: |\n            one\n              deeper: text\n\n          expect: {contains: x}\n        # a comment\n       - prompt: y\n",
			`c.yml:17: invalid YAML: list item is indented 7 spaces, which lines up with nothing above it: indent it 8 spaces to align it with the list item (line 11), or 2 spaces to align it with the list item (line 6)`,
		},
		{
			"tab: yaml's message at the tab's own line",
			validTarget + "probes:\n  - name: x\n\tapi: chat\n",
			`c.yml:7: invalid YAML: found a tab character that violates indentation`,
		},
		{
			"not indentation: an unquoted colon in a flow mapping",
			head + "    workload:\n      prompts:\n        - messages: [{role: user, content: What is: this}]\n",
			`c.yml:11: invalid YAML: did not find expected ',' or '}'`,
		},
		{
			"a misplaced key, not a mis-indented one",
			head + "    e2el: 5s\n    workload: {random: {input_tokens: 1, output_tokens: 1}}\n",
			`c.yml:9: probes[0]: unknown field "e2el": it is a key of probes[0].slo, write it under "slo"`,
		},
		{
			"an unknown key that is no field nearby keeps the typo suggestion",
			head + "    slo:\n      tfft: 1s\n    workload: {random: {input_tokens: 1, output_tokens: 1}}\n",
			`c.yml:10: probes[0].slo: unknown field "tfft" (did you mean "ttft"?)`,
		},
		{
			"under-indented past another misplaced key",
			head + "    quality:\n      regex: x\n    finish_reasons: [stop]\n    json: true\n    workload: {random: {input_tokens: 1, output_tokens: 1}}\n",
			"c.yml:11: probes[0]: unknown field \"finish_reasons\": it is a key of \"quality\" (line 9), indent it deeper to put it under \"quality\"\n" +
				`c.yml:12: probes[0]: unknown field "json": it is a key of "quality" (line 9), indent it deeper to put it under "quality"`,
		},
		{
			"over-indented under a key whose value is a list",
			validTarget + "    probes: [x]\n    http_client_config:\n      follow_redirects: true\n      url: http://127.0.0.1:9\n" + validProbe,
			`c.yml:8: targets[0].http_client_config: unknown field "url": it is a key of targets[0], indent it less to align it with "http_client_config" (line 6)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "c.yml")
			if err == nil || err.Error() != tc.want {
				t.Errorf("doc:\n%s\ngot error:\n%v\nwant:\n%s", tc.doc, err, tc.want)
			}
		})
	}
}
