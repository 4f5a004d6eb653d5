package plan

// The accounting of probe/result.go in label values, which the rules
// select and their promtool tests feed. Neither imports probe (both are
// generated from the config alone), so the values are spelled here;
// accounting_test.go compares them with probe's.
var (
	// AbandonedReasons are the cancelled reasons for which the prober gave
	// a request up for its own reasons (probe.Result.Abandoned): only these
	// leave the acceptance denominator. in_flight_cap is not one of them.
	AbandonedReasons = []string{"shutdown", "removed"}
	// CompletedDispositions are the dispositions of a response the server
	// completed, useful or not (probe.Result.ServerCompleted).
	CompletedDispositions = []string{"accepted", "latency_failure", "quality_failure"}
	// CompletedFailureReasons are the server_failure reasons for which the
	// server answered and ended the response itself
	// (probe.CompletedFailureReasons).
	CompletedFailureReasons = []string{"http_4xx", "http_429", "http_5xx", "redirect", "stream_error", "protocol", "no_done"}
)

// ReasonInFlightCap is the cancelled reason of a request shed because
// max_in_flight requests were outstanding (probe.ReasonInFlightCap).
const ReasonInFlightCap = "in_flight_cap"
