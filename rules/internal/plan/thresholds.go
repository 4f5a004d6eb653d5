package plan

import (
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
)

// ForTime is the scaled for: of d; 0 stays 0 (no for:).
func (p *Plan) ForTime(d time.Duration) time.Duration {
	if d == 0 {
		return 0
	}
	return p.Scale(d)
}

// InFlightCapFor is the for: of the in-flight cap alert over window w.
func (p *Plan) InFlightCapFor(w time.Duration) time.Duration {
	return max(p.Scale(p.Options.TicketFor), 2*w)
}

// HeldRatio: a burn pair fires only when its long window holds at least
// this many times the requests of its short window. Full windows hold
// long/short times as many (at least 2); after the prober starts, both
// hold only what it has sent so far, and one early failure in a few
// requests would burn both above the threshold and page. The windows were
// chosen (planBurn) for the requests full windows hold.
const HeldRatio = 1.5

// TargetDownRatio is the share of the requests that ended, cancelled ones
// left out, that must end in server_failure for a target to count as
// down. Cancelled requests are left out because they say nothing about
// the server: shed ones were never sent (a blackholed server that holds
// every connection until the dial times out sheds most of its offered
// requests) and abandoned ones were given up by the prober.
const TargetDownRatio = 0.9

// TargetDownMinRequests is how many requests, cancelled ones left out,
// must have ended in a target's window before VLLMProbeTargetDown judges
// it. The window is chosen to hold MinCountWindow of them, so a single
// lost request of a low-rate target is at most one in several and never
// 90%; and right after the prober starts, a few early failures do not page
// before this many requests have ended. With this guard the alert needs
// no for: of its own (it takes PageFor).
const TargetDownMinRequests = MinCountWindow / 2

// InFlightCapRatio is the share of a pair's offered requests shed at
// max_in_flight, over the pair's count window, above which
// VLLMProbeInFlightCapReached fires once it has held for the ticket for:
// (at least two windows, so one shed request, which leaves the window
// after one window, never fires it).
const InFlightCapRatio = 0.01

// SLOMetric is the histogram of each latency SLO.
var SLOMetric = map[string]string{
	"ttft": metricname.TTFT,
	"ttfa": metricname.TTFA,
	"tpot": metricname.TPOT,
	"e2el": metricname.E2EL,
}
