package config

import "testing"

func TestFingerprintDefaults(t *testing.T) {
	for _, tt := range []struct {
		name, block string
		want        *Fingerprint
	}{
		{"absent", "", nil},
		{"empty block", "    fingerprint: {}\n", &Fingerprint{Tokens: 16, Confirm: 3}},
		{"tokens only", "    fingerprint: {tokens: 8}\n", &Fingerprint{Tokens: 8, Confirm: 3}},
		{"confirm only", "    fingerprint:\n      confirm: 5\n", &Fingerprint{Tokens: 16, Confirm: 5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(`targets: [{name: t, url: "http://127.0.0.1:8000"}]
probes:
  - name: p
    api: chat
    rate: 1
    workload:
      prompts:
        - messages: [{role: user, content: hi}]
          seed: 7
`+tt.block), "drift.yml")
			if err != nil {
				t.Fatal(err)
			}
			p := cfg.Probes[0]
			if got := p.Fingerprint; (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("fingerprint = %+v, want %+v", got, tt.want)
			}
			if s := p.Workload.Prompts[0].Seed; s == nil || *s != 7 {
				t.Errorf("prompt seed = %v, want 7", s)
			}
		})
	}
}
