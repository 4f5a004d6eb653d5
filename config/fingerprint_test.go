package config

import "testing"

func TestFingerprint(t *testing.T) {
	base := func() (Target, Probe) {
		return Target{Name: "t", URL: "http://a"},
			Probe{Name: "p", Rate: 1, Request: Request{Extra: map[string]any{"a": 1, "b": []any{"x"}}}}
	}
	ref := fingerprint(base())
	for _, tc := range []struct {
		name   string
		modify func(*Target, *Probe)
		same   bool
	}{
		{"identical", func(*Target, *Probe) {}, true},
		{"line numbers ignored", func(t *Target, p *Probe) { t.Line, p.Line = 3, 9 }, true},
		{"rate", func(_ *Target, p *Probe) { p.Rate = 2 }, false},
		{"url", func(t *Target, _ *Probe) { t.URL = "http://b" }, false},
		{"secret", func(t *Target, _ *Probe) { t.HTTPClientConfig.BearerToken = "s3cret" }, false},
		{"extra value", func(_ *Target, p *Probe) { p.Request.Extra["a"] = 2 }, false},
		{"extra type", func(_ *Target, p *Probe) { p.Request.Extra["a"] = "1" }, false},
		{"regex", func(_ *Target, p *Probe) { p.Quality.Regex = Regexp{Source: "x"} }, false},
		{"workload", func(_ *Target, p *Probe) { p.Workload.Random = &RandomWorkload{} }, false},
		{"histograms", func(_ *Target, p *Probe) { p.Histograms = []string{HistogramTTFT} }, false},
		{"classic buckets", func(_ *Target, p *Probe) { off := false; p.ClassicBuckets = &off }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, probe := base()
			tc.modify(&target, &probe)
			if got := fingerprint(target, probe) == ref; got != tc.same {
				t.Errorf("same fingerprint = %v, want %v", got, tc.same)
			}
		})
	}
}
