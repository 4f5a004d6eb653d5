package pyfmt

import (
	"math"
	"testing"
)

// TestFormats pins the Python spellings vLLM's output uses.
func TestFormats(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"float {:.2f}", Float(3.14159, 2), "3.14"},
		{"float inf", Float(math.Inf(1), 2), "inf"},
		{"float -inf", Float(math.Inf(-1), 4), "-inf"},
		{"float nan", Float(math.NaN(), 2), "nan"},
		{"rate integer", Rate(10), "10.0"},
		{"rate fraction", Rate(0.5), "0.5"},
		{"rate inf", Rate(math.Inf(1)), "inf"},
		{"percentile integer", Percentile(99), "99"},
		{"percentile fraction", Percentile(99.9), "99.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	if v := JSONFloat(math.Inf(1)); v != "inf" {
		t.Errorf("JSONFloat(+Inf) = %v, want the string inf", v)
	}
	if v := JSONFloat(2.5); v != 2.5 {
		t.Errorf("JSONFloat(2.5) = %v, want the number", v)
	}
}
