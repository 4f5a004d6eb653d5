package rules

import (
	"fmt"
	"strings"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
)

// selector joins label matchers into a PromQL selector; empty ones are
// left out.
func selector(matchers ...string) string {
	var ms []string
	for _, m := range matchers {
		if m != "" {
			ms = append(ms, m)
		}
	}
	return "{" + strings.Join(ms, ",") + "}"
}

func oneOf(label string, values []string) string {
	return fmt.Sprintf("%s=~%q", label, strings.Join(values, "|"))
}

// Aggregations of the rates: per (target, probe), the whole pair, and
// per replica, where a gateway's or static target's series (no replica
// label) stay one series of their own.
const (
	byPair    = "target, probe"
	byReplica = "target, probe, replica"
)

// rateBy is the per-second rate of metric over window, summed by the
// labels of by.
func rateBy(by, metric, matchers, extra, window string) string {
	return fmt.Sprintf("sum by (%s) (rate(%s%s[%s]))", by, metric, selector(matchers, extra), window)
}

// pairRate is the per-second rate of metric over window, summed per
// (target, probe).
func pairRate(metric, matchers, extra, window string) string {
	return rateBy(byPair, metric, matchers, extra, window)
}

// OfferedExpr is the PromQL of offered requests per second over window,
// per (target, probe), for the series matched by matchers (label matchers
// without braces, e.g. `job="vllm-prober"`; "" for all).
func OfferedExpr(matchers, window string) string {
	return pairRate(metricname.RequestsOffered, matchers, "", window)
}

// GoodputExpr is the PromQL of accepted requests per second.
func GoodputExpr(matchers, window string) string {
	return pairRate(metricname.Requests, matchers, `disposition="accepted"`, window)
}

// CompletedExpr is the PromQL of completed throughput: the requests the
// server completed (accepted, latency_failure, quality_failure, and
// server_failure with a completed reason) per second.
func CompletedExpr(matchers, window string) string {
	return pairRate(metricname.Requests, matchers, oneOf("disposition", plan.CompletedDispositions), window) +
		"\n+\n" + pairRate(metricname.Failures, matchers, oneOf("reason", plan.CompletedFailureReasons), window)
}

// countedExpr is the acceptance denominator per second: every terminal
// disposition except the requests the prober abandoned. Requests shed at
// max_in_flight stay in it.
func countedExpr(by, matchers, window string) string {
	return "(\n  " + rateBy(by, metricname.Requests, matchers, "", window) +
		"\n  -\n  " + rateBy(by, metricname.Failures, matchers, oneOf("reason", plan.AbandonedReasons), window) + "\n)"
}

// AcceptanceExpr is the PromQL of the acceptance ratio: accepted requests
// divided by every terminal disposition except the abandoned ones.
func AcceptanceExpr(matchers, window string) string {
	return acceptanceBy(byPair, matchers, window)
}

// ReplicaAcceptanceExpr is AcceptanceExpr per (target, probe, replica):
// each discovered replica's series apart, and a gateway's or static
// target's series (no replica label) as one series.
func ReplicaAcceptanceExpr(matchers, window string) string {
	return acceptanceBy(byReplica, matchers, window)
}

// acceptanceBy is the acceptance ratio summed by the labels of by.
func acceptanceBy(by, matchers, window string) string {
	return rateBy(by, metricname.Requests, matchers, `disposition="accepted"`, window) + "\n/\n" + countedExpr(by, matchers, window)
}

// ShedExpr is the PromQL of the share of offered requests cancelled
// because max_in_flight requests were outstanding.
func ShedExpr(matchers, window string) string {
	return pairRate(metricname.Failures, matchers, fmt.Sprintf("reason=%q", plan.ReasonInFlightCap), window) +
		"\n/\n" + OfferedExpr(matchers, window)
}
