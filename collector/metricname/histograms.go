package metricname

// SelectedBy maps each per-pair histogram family to the name that selects
// it in a probe's `histograms:` list (config.Histograms; docs/design.md,
// Series budget). A collector test checks it against what each selection
// exports.
var SelectedBy = map[string]string{
	TTFT:            "ttft",
	TTFA:            "ttfa",
	ITL:             "itl",
	TPOT:            "tpot",
	E2EL:            "e2el",
	HTTPPhase:       "phases",
	ScheduleLag:     "schedule_lag",
	ServerTTFT:      "server",
	ServerQueueTime: "server",
}
