//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/rules"
)

// shedMaxInFlight and shedFaults make the prober shed most requests: at
// 10 requests/s, a first token 1s late (well inside the 2s TTFT SLO) lets
// only about two requests a second through two in-flight slots.
const (
	shedMaxInFlight = 2
	shedFaults      = `{"extra_ttft": "1s"}`
	// shedWithin covers the 10s page window reaching 12% failures and
	// forgetting the healthy requests (no for:), and the 5s in-flight cap
	// window plus its 15s for:.
	shedWithin = 90 * time.Second
)

// TestAlertsShedding proves with real Prometheus and Alertmanager that
// overload shedding burns the budget: the server answers every request it
// gets, but the prober cancels most at max_in_flight, so the acceptance
// ratio drops, the fast-burn page reaches the webhook and the in-flight
// cap alert fires.
func TestAlertsShedding(t *testing.T) {
	s := startAlertStack(t, shedMaxInFlight)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("diagnostics:\n" + s.diagnostics())
		}
	})
	pair, sel, page := s.pair(), s.pairSel(), s.severePage(t)
	long, short := page["long_window"], page["short_window"]
	s.waitForData(t)

	t.Logf("overload phase: %s with max_in_flight %d", shedFaults, shedMaxInFlight)
	s.setFaults(t, shedFaults)
	start := time.Now()
	acceptance := rules.RecordAcceptance + long + sel
	s.waitFor(t, shedWithin, acceptance+" < 0.5", func() bool {
		v, err := query(s.prom, acceptance+" < 0.5")
		return err == nil && len(v) == 1
	})
	t.Logf("acceptance below 0.5 %s after the overload began", time.Since(start).Round(time.Second))

	capAlert := with(pair, "alertname", rules.AlertInFlightCap, "severity", rules.SeverityTicket)
	s.waitFor(t, shedWithin, "the fast-burn page on /page and the in-flight cap alert on /ticket", func() bool {
		return len(s.webhook.firing("/page", page)) > 0 && len(s.webhook.firing("/ticket", capAlert)) > 0
	})
	t.Logf("page and in-flight cap alert reached the webhook %s after the overload began", time.Since(start).Round(time.Second))
	for _, a := range s.webhook.firing("/ticket", capAlert) {
		t.Logf("in-flight cap: %s", a.Annotations["summary"])
	}
	// Under sustained overload: the requests the server got were answered
	// in time (the former denominator, every disposition but cancelled,
	// would show about 1 and page nobody); the drop is the shedding.
	pairMatchers := fmt.Sprintf("target=%q,probe=%q", pair["target"], pair["probe"])
	sent := fmt.Sprintf(`sum(rate(vllm_probe_requests_total{%[1]s,disposition="accepted"}[%[2]s])) / sum(rate(vllm_probe_requests_total{%[1]s,disposition!="cancelled"}[%[2]s]))`,
		pairMatchers, short)
	shed := rules.ShedExpr(pairMatchers, short)
	for name, expr := range map[string]string{"acceptance": rules.RecordAcceptance + short + sel, "accepted share of sent requests": sent, "shed share": shed,
		"completed/s": rules.RecordCompleted + short + sel, "offered/s": rules.RecordOffered + short + sel} {
		v, err := query(s.prom, expr)
		if err != nil || len(v) != 1 {
			t.Fatalf("%s: %v %v\n%s", name, v, err, expr)
		}
		t.Logf("%s over %s: %.3f", name, short, sampleValue(v[0]))
		if (name == "shed share" && sampleValue(v[0]) < 0.5) || (name == "acceptance" && sampleValue(v[0]) > 0.5) {
			t.Errorf("%s %.3f: want most requests shed and not accepted", name, sampleValue(v[0]))
		}
	}

	s.requireRulesHealthy(t)
}
