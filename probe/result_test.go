package probe

import (
	"fmt"
	"testing"
)

func TestAbandonedAndServerCompleted(t *testing.T) {
	cases := []struct {
		name                 string
		r                    Result
		abandoned, completed bool
	}{
		{"accepted", Result{Disposition: Accepted, HTTPStatus: 200}, false, true},
		{"latency", Result{Disposition: LatencyFailure, Reason: ReasonLatency, HTTPStatus: 200}, false, true},
		{"quality", Result{Disposition: QualityFailure, Reason: ReasonQuality, HTTPStatus: 200}, false, true},
		{"http 500", Result{Disposition: ServerFailure, Reason: ReasonHTTP5xx, HTTPStatus: 500}, false, true},
		{"redirect", Result{Disposition: ServerFailure, Reason: ReasonRedirect, HTTPStatus: 302}, false, true},
		{"stream error", Result{Disposition: ServerFailure, Reason: ReasonStreamError, HTTPStatus: 200}, false, true},
		{"no done", Result{Disposition: ServerFailure, Reason: ReasonNoDone, HTTPStatus: 200}, false, true},
		{"disconnect", Result{Disposition: ServerFailure, Reason: ReasonDisconnect, HTTPStatus: 200}, false, false},
		{"connect", Result{Disposition: ServerFailure, Reason: ReasonConnect}, false, false},
		{"timeout", Result{Disposition: ClientTimeout, Reason: ReasonTimeout, HTTPStatus: 200}, false, false},
		{"shed", Result{Disposition: Cancelled, Reason: ReasonInFlightCap}, false, false},
		{"shutdown", Result{Disposition: Cancelled, Reason: ReasonShutdown, HTTPStatus: 200}, true, false},
		{"removed", Result{Disposition: Cancelled, Reason: ReasonRemoved}, true, false},
		{"unfinished", Result{Disposition: Unfinished, HTTPStatus: 200}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Abandoned(); got != c.abandoned {
				t.Errorf("Abandoned() = %v, want %v", got, c.abandoned)
			}
			if got := c.r.ServerCompleted(); got != c.completed {
				t.Errorf("ServerCompleted() = %v, want %v", got, c.completed)
			}
		})
	}
}

func TestObservedCensoring(t *testing.T) {
	const s = 1e9 // one second, as a time.Duration
	cases := []struct {
		name       string
		r          Result
		ttft, e2el float64 // seconds; -1 = nothing to record
	}{
		{"accepted", Result{Disposition: Accepted, TTFT: s / 10, E2EL: 2 * s, Elapsed: 2 * s}, 0.1, 2},
		{"timeout without a token", Result{Disposition: ClientTimeout, Elapsed: 5 * s}, 5, 5},
		{"timeout after a token", Result{Disposition: ClientTimeout, TTFT: s / 2, Elapsed: 5 * s}, 0.5, 5},
		{"connect failure", Result{Disposition: ServerFailure, Reason: ReasonConnect}, -1, -1},
		// An embeddings request has no first token to wait for: its
		// timeout is an E2EL, never a TTFT.
		{"embeddings accepted", Result{Embeddings: true, Disposition: Accepted, E2EL: s / 4, Elapsed: s / 4}, -1, 0.25},
		{"embeddings timeout", Result{Embeddings: true, Disposition: ClientTimeout, Elapsed: 5 * s}, -1, 5},
	}
	seconds := func(d float64, ok bool) float64 {
		if !ok {
			return -1
		}
		return d / s
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok := c.r.ObservedTTFT()
			if got := seconds(float64(d), ok); got != c.ttft {
				t.Errorf("ObservedTTFT = %v s, want %v", got, c.ttft)
			}
			d, ok = c.r.ObservedE2EL()
			if got := seconds(float64(d), ok); got != c.e2el {
				t.Errorf("ObservedE2EL = %v s, want %v", got, c.e2el)
			}
		})
	}
}

// TestRequestID: the prober's X-Request-Id is target-probe-seq-nonce with
// the nonce as 8 lower-case hexadecimal digits, and RequestNonce gives
// the nonce back from exactly those IDs of the pair and seq.
func TestRequestID(t *testing.T) {
	for _, tc := range []struct {
		target, probe string
		seq           uint64
		nonce         uint32
	}{{"t", "p", 1, 0}, {"gpu-a", "chat-1", 18446744073709551615, 0xffffffff}, {"", "", 0, 42}, {"a-b", "c", 7, 0x0a0b0c0d}} {
		id := RequestID(tc.target, tc.probe, tc.seq, tc.nonce)
		if want := fmt.Sprintf("%s-%s-%d-%08x", tc.target, tc.probe, tc.seq, tc.nonce); id != want {
			t.Errorf("RequestID = %q, want %q", id, want)
		}
		if n, ok := RequestNonce(id, tc.target, tc.probe, tc.seq); !ok || n != tc.nonce {
			t.Errorf("RequestNonce(%q) = %#x, %v; want %#x, true", id, n, ok, tc.nonce)
		}
	}
	for _, id := range []string{"", "t-p-1-0000002A", "t-p-1-02a", "t-p-2-0000002a", "t-q-1-0000002a", "t-p-01-0000002a",
		"t-p-1-+000002a", "t-p-1-0x00002a", "chatcmpl-0123456789abcdef", "xt-p-1-0000002a"} {
		if n, ok := RequestNonce(id, "t", "p", 1); ok {
			t.Errorf("RequestNonce(%q) = %#x, true; want false", id, n)
		}
	}
}
