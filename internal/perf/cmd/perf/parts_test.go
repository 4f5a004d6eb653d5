package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/perf"
)

// TestSelectParts checks -only: the default runs every part but those
// within another, a part within a named one does not run twice, and an
// unknown name is refused with the list of parts.
func TestSelectParts(t *testing.T) {
	tests := []struct {
		only    string
		want    []string
		wantErr string
	}{
		{"soak, cost", []string{"cost", "soak"}, ""},
		{"schedule.workers", []string{"schedule.workers"}, ""},
		{"schedule,schedule.workers", []string{"schedule"}, ""},
		{"cost,sidecar", nil, `-only: unknown part "sidecar" (parts: ` + strings.Join(partNames(), ", ") + ")"},
	}
	defaults := defaultParts()
	if slices.Contains(defaults, "schedule.workers") || !slices.Contains(defaults, "soak") || !slices.Contains(defaults, "cost") {
		t.Errorf("default parts %q", defaults)
	}
	for _, tc := range tests {
		t.Run(tc.only, func(t *testing.T) {
			parts, err := selectParts(tc.only)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range parts {
				got = append(got, p.name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("parts %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAccuracyRates checks -accuracy.rates: a subset in the order given,
// each rate with its duration, and an unknown rate refused by name.
func TestAccuracyRates(t *testing.T) {
	got, err := accuracyRates("1000, 10")
	if err != nil {
		t.Fatal(err)
	}
	if want := []accuracyRate{allAccuracyRates[2], allAccuracyRates[0]}; !slices.Equal(got, want) {
		t.Errorf("rates %v, want %v", got, want)
	}
	if _, err := accuracyRates("10,20"); err == nil || err.Error() != `-accuracy.rates: "20" is not one of 10, 300, 1000, 2000` {
		t.Errorf("error %v", err)
	}
}

// TestScaleCases checks the scale part's runs: each -scale.targets count
// for each -scale.server-metrics mode, then the -scale.baseline run at 100
// targets, after the binary's or, with -scale.beside, beside it in place of
// the binary's own run at 100 targets (or after the others when
// -scale.targets has no 100); -scale.beside alone is refused.
func TestScaleCases(t *testing.T) {
	saved := []string{*scaleTargets, *scaleServer, *scaleBaseline}
	savedBeside := *scaleBeside
	t.Cleanup(func() {
		*scaleTargets, *scaleServer, *scaleBaseline = saved[0], saved[1], saved[2]
		*scaleBeside = savedBeside
	})
	*scaleTargets, *scaleServer = "3,100", "off"
	tests := []struct {
		baseline string
		beside   bool
		want     []scaleCase
		wantErr  string
	}{
		{"", false, []scaleCase{{targets: 3, noServer: true, binary: "new"}, {targets: 100, noServer: true, binary: "new"}}, ""},
		{"old", false, []scaleCase{{targets: 3, noServer: true, binary: "new"}, {targets: 100, noServer: true, binary: "new"},
			{targets: 100, noServer: true, binary: "old", label: "baseline "}}, ""},
		{"old", true, []scaleCase{{targets: 3, noServer: true, binary: "new"},
			{targets: 100, noServer: true, binary: "new", beside: "old", label: "side by side: "}}, ""},
		{"", true, nil, "-scale.beside needs -scale.baseline"},
	}
	for _, tc := range tests {
		*scaleBaseline, *scaleBeside = tc.baseline, tc.beside
		got, err := scaleCases("new")
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("baseline %q, beside %v: error %v, want %q", tc.baseline, tc.beside, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("baseline %q, beside %v: %+v, %v; want %+v", tc.baseline, tc.beside, got, err, tc.want)
		}
	}
	*scaleTargets, *scaleBaseline, *scaleBeside = "3", "old", true
	want := []scaleCase{{targets: 3, noServer: true, binary: "new"}, {targets: 100, noServer: true, binary: "new", beside: "old", label: "side by side: "}}
	if got, err := scaleCases("new"); err != nil || !slices.Equal(got, want) {
		t.Errorf("-scale.targets 3, beside: %+v, %v; want %+v", got, err, want)
	}
}

// TestScrapeAccept checks -scrape: prometheus asks as Prometheus would,
// for protobuf where the histograms are native only and for OpenMetrics
// elsewhere; a named format is asked for in every part.
func TestScrapeAccept(t *testing.T) {
	tests := []struct {
		scrape                   string
		nativeOnly, withClassics string
	}{
		{"prometheus", perf.AcceptProtobuf, perf.AcceptOpenMetrics},
		{"text", "", ""},
		{"openmetrics", perf.AcceptOpenMetrics, perf.AcceptOpenMetrics},
		{"protobuf", perf.AcceptProtobuf, perf.AcceptProtobuf},
	}
	for _, tc := range tests {
		o := options{scrape: tc.scrape}
		if got := o.accept(true); got != tc.nativeOnly {
			t.Errorf("-scrape %s, native only: Accept %q, want %q", tc.scrape, got, tc.nativeOnly)
		}
		if got := o.accept(false); got != tc.withClassics {
			t.Errorf("-scrape %s, classic buckets: Accept %q, want %q", tc.scrape, got, tc.withClassics)
		}
	}
}
