package probe

import "testing"

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
