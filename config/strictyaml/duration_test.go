package strictyaml

import "testing"

func TestWholeDuration(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"1.5s", "1500ms", true},
		{"0.5m", "30s", true},
		{"2.5h", "150m", true},
		{"1.5d", "36h", true},
		{"0.5w", "84h", true},
		{"0.5y", "4380h", true},
		{"2.0s", "2s", true},
		{"7.s", "7s", true},
		{"1h0.5m", "3630s", true},
		{"1.5ms", "", false},       // below the millisecond resolution
		{"0.0s", "", false},        // not positive
		{"1.5", "", false},         // no unit
		{"1.5x", "", false},        // unknown unit
		{"-1.5s", "", false},       // negative
		{"1.5 s", "", false},       // space
		{"1m30s", "", false},       // no fraction: not this function's case
		{"1e3.5s", "", false},      // not a number
		{"3000000y.5s", "", false}, // overflows time.Duration
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := wholeDuration(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("wholeDuration(%q) = %q, %v, want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}
