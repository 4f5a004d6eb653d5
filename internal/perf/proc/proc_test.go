package proc

import (
	"os"
	"testing"
)

func TestProcParsers(t *testing.T) {
	stat := "4242 (vllm prober) S 1 4242 4242 0 -1 4194560 2398 0 0 0 150 37 0 0 20 0 9 0 1234 1392640 6876 18446744073709551615"
	status := "Name:\tvllm-prober\nVmHWM:\t   30000 kB\nVmRSS:\t   27548 kB\nvoluntary_ctxt_switches:\t1234\nnonvoluntary_ctxt_switches:\t56\n"
	tests := []struct {
		name string
		got  func() (int64, error)
		want int64
	}{
		{"utime+stime of a name with a space", func() (int64, error) { d, err := parseStatCPU(stat); return int64(d), err }, int64(187 * clockTick)},
		{"schedstat", func() (int64, error) { d, err := parseSchedstat("86000123 5000 42\n"); return int64(d), err }, 86000123},
		{"VmRSS", func() (int64, error) { return parseStatusKB(status, "VmRSS:"), nil }, 27548 << 10},
		{"VmHWM", func() (int64, error) { return parseStatusKB(status, "VmHWM:"), nil }, 30000 << 10},
		{"missing key", func() (int64, error) { return parseStatusKB(status, "VmSwap:"), nil }, 0},
		{"voluntary switches", func() (int64, error) { return parseStatusInt(status, "voluntary_ctxt_switches:"), nil }, 1234},
		{"involuntary switches", func() (int64, error) { return parseStatusInt(status, "nonvoluntary_ctxt_switches:"), nil }, 56},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.got()
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "no parenthesis", "1 (x) S 1 2"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q) succeeded", bad)
		}
	}
}

// TestReadSelf reads this test process: it has run, so its CPU time,
// ticks and memory are above zero, and its peak RSS is not below its RSS.
func TestReadSelf(t *testing.T) {
	for range 1_000_000 {
		_ = os.Getpid()
	}
	s, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.CPU <= 0 || s.RSS <= 0 || s.PeakRSS < s.RSS || s.Voluntary+s.Involuntary <= 0 {
		t.Errorf("sample of this process: %+v", s)
	}
	if _, err := Read(-1); err == nil {
		t.Error("Read(-1) succeeded")
	}
}
