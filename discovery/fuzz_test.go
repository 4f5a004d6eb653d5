package discovery

import "testing"

// FuzzParseTargetGroups checks that no file or answer panics either
// parser, and that every replica they accept has a canonical, valid
// address and valid labels.
func FuzzParseTargetGroups(f *testing.F) {
	for _, seed := range []string{
		`[{"targets": ["10.0.0.1:8000", "[fd00::1]:80"], "labels": {"zone": "a", "__scheme__": "https"}}]`,
		"- targets: [vllm-0.vllm:8000]\n  labels: {rack: r1}\n",
		"[]", "", "null", "- targets:\n  - {a: b}\n", `[{"targets": ["h:0"]}]`, "[] []", "[]\n---\n[]\n",
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, doc string, asJSON bool) {
		parse := parseYAML
		if asJSON {
			parse = parseJSON
		}
		found, err := parse("f", []byte(doc))
		if err != nil {
			return
		}
		for _, r := range found {
			if addr, err := checkAddr(r.Addr); err != nil || addr != r.Addr {
				t.Errorf("accepted address %q: checked again %q, %v", r.Addr, addr, err)
			}
			if _, err := checkLabels(r.Labels); err != nil {
				t.Errorf("accepted labels %v: %v", r.Labels, err)
			}
		}
	})
}
