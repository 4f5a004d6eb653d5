package main

import (
	"slices"
	"strings"
	"testing"
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
