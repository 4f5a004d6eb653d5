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
	// shedWithin covers the 30s window forgetting the healthy requests,
	// the 10s page window reaching 12% failures (no for:), and the
	// 5s in-flight cap window plus its 15s for:.
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
	pair := map[string]string{"target": alertTarget, "probe": alertProbe}
	sel := fmt.Sprintf("{target=%q,probe=%q}", alertTarget, alertProbe)
	s.waitForData(t)

	t.Logf("overload phase: %s with max_in_flight %d", shedFaults, shedMaxInFlight)
	s.setFaults(t, shedFaults)
	start := time.Now()
	acceptance := rules.RecordAcceptance + "30s" + sel
	s.waitFor(t, shedWithin, acceptance+" < 0.5", func() bool {
		v, err := query(s.prom, acceptance+" < 0.5")
		return err == nil && len(v) == 1
	})
	t.Logf("acceptance below 0.5 %s after the overload began", time.Since(start).Round(time.Second))

	page := with(pair, "alertname", rules.AlertFastBurn, "severity", rules.SeverityPage, "long_window", "10s", "short_window", "5s")
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
	sent := fmt.Sprintf(`sum(rate(vllm_probe_requests_total{target=%q,probe=%q,disposition="accepted"}[5s])) / sum(rate(vllm_probe_requests_total{target=%q,probe=%q,disposition!="cancelled"}[5s]))`,
		alertTarget, alertProbe, alertTarget, alertProbe)
	shed := rules.ShedExpr(fmt.Sprintf("target=%q,probe=%q", alertTarget, alertProbe), "5s")
	acceptance5s := rules.RecordAcceptance + "5s" + sel
	for name, expr := range map[string]string{"acceptance": acceptance5s, "accepted share of sent requests": sent, "shed share": shed,
		"completed/s": rules.RecordCompleted + "5s" + sel, "offered/s": rules.RecordOffered + "5s" + sel} {
		v, err := query(s.prom, expr)
		if err != nil || len(v) != 1 {
			t.Fatalf("%s: %v %v\n%s", name, v, err, expr)
		}
		t.Logf("%s over 5s: %.3f", name, sampleValue(v[0]))
		if (name == "shed share" && sampleValue(v[0]) < 0.5) || (name == "acceptance" && sampleValue(v[0]) > 0.5) {
			t.Errorf("%s %.3f: want most requests shed and not accepted", name, sampleValue(v[0]))
		}
	}

	s.requireRulesHealthy(t)
}
