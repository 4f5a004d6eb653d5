// Package metricname spells the names and help texts of every metric the
// prober exports (docs/design.md, "Metrics"). It imports nothing, so the
// collector that exports them and the rules generator that queries them
// share one spelling without rules depending on the collector or probe.
package metricname

// Probe metrics, one series per (target, probe) and label.
const (
	// RequestsOffered is `vllm_probe_requests_offered_total`.
	RequestsOffered     = "vllm_probe_requests_offered_total"
	RequestsOfferedHelp = "Requests whose planned send time has come, counted before they are sent or refused."

	// Requests is `vllm_probe_requests_total`.
	Requests     = "vllm_probe_requests_total"
	RequestsHelp = "Finished requests by terminal disposition; offered = sum of dispositions + in flight."

	// Failures is `vllm_probe_failures_total`.
	Failures     = "vllm_probe_failures_total"
	FailuresHelp = "Requests that were not accepted, by finer reason."

	// SLOViolations is `vllm_probe_slo_violations_total`.
	SLOViolations     = "vllm_probe_slo_violations_total"
	SLOViolationsHelp = "Requests that violated a latency SLO, by SLO; one request can violate several."

	// QualityFailures is `vllm_probe_quality_failures_total`.
	QualityFailures     = "vllm_probe_quality_failures_total"
	QualityFailuresHelp = "Requests that failed a quality check, by check; one request can fail several."

	// RequestsInFlight is `vllm_probe_requests_in_flight`.
	RequestsInFlight     = "vllm_probe_requests_in_flight"
	RequestsInFlightHelp = "Requests offered and not yet finished."

	// PromptTokens is `vllm_probe_prompt_tokens_total`.
	PromptTokens     = "vllm_probe_prompt_tokens_total"
	PromptTokensHelp = "Prompt tokens of finished requests: the server's usage, else the prober's estimate."

	// OutputTokens is `vllm_probe_output_tokens_total`.
	OutputTokens     = "vllm_probe_output_tokens_total"
	OutputTokensHelp = "Output tokens of finished requests: the server's usage, else the prober's estimate."

	// TTFT is `vllm_probe_time_to_first_token_seconds`.
	TTFT     = "vllm_probe_time_to_first_token_seconds"
	TTFTHelp = "Client-side time from sending the request to the first token-carrying event; a client timeout without a token is observed at the time it was abandoned (censored at the timeout)."

	// ITL is `vllm_probe_inter_token_latency_seconds`.
	ITL     = "vllm_probe_inter_token_latency_seconds"
	ITLHelp = "Client-side gap between consecutive token-carrying events, one observation per gap."

	// TPOT is `vllm_probe_time_per_output_token_seconds`.
	TPOT     = "vllm_probe_time_per_output_token_seconds"
	TPOTHelp = "Client-side (E2EL - TTFT) / (output tokens - 1) of completed streams."

	// E2EL is `vllm_probe_e2e_request_latency_seconds`.
	E2EL     = "vllm_probe_e2e_request_latency_seconds"
	E2ELHelp = "Client-side time from sending the request to the last token-carrying event of completed streams; a client timeout is observed at the time it was abandoned (censored at the timeout)."

	// HTTPPhase is `vllm_probe_http_phase_seconds`.
	HTTPPhase     = "vllm_probe_http_phase_seconds"
	HTTPPhaseHelp = "Duration of each HTTP phase of a request (dns, connect, tls, headers, first_token, decode)."

	// ScheduleLag is `vllm_probe_schedule_lag_seconds`.
	ScheduleLag     = "vllm_probe_schedule_lag_seconds"
	ScheduleLagHelp = "Actual send time minus planned send time of sent requests."

	// ServerTTFT is `vllm_probe_server_time_to_first_token_seconds`.
	ServerTTFT     = "vllm_probe_server_time_to_first_token_seconds"
	ServerTTFTHelp = "The server's own TTFT for probe requests, from vLLM's per-request metrics."

	// TTFA is `vllm_probe_time_to_first_answer_token_seconds`.
	TTFA     = "vllm_probe_time_to_first_answer_token_seconds"
	TTFAHelp = "Client-side time from sending the request to the first answer-carrying event (delta.content or a tool call) after any reasoning; a client timeout without an answer is observed at the time it was abandoned (censored at the timeout)."

	// ReasoningTokens is `vllm_probe_reasoning_tokens_total`.
	ReasoningTokens     = "vllm_probe_reasoning_tokens_total"
	ReasoningTokensHelp = "Reasoning tokens of finished requests: usage.completion_tokens_details.reasoning_tokens when the server reports it, else the count of reasoning-carrying events."

	// OutputFingerprintChanges is `vllm_probe_output_fingerprint_changes_total`.
	OutputFingerprintChanges     = "vllm_probe_output_fingerprint_changes_total"
	OutputFingerprintChangesHelp = "Confirmed changes of a prompt's deterministic output fingerprint (the hash of its first output tokens at temperature 0)."

	// ServerQueueTime is `vllm_probe_server_queue_time_seconds`.
	ServerQueueTime     = "vllm_probe_server_queue_time_seconds"
	ServerQueueTimeHelp = "The server's queue time for probe requests, from vLLM's per-request metrics."
)

// Metrics of the one-request /probe registry, after blackbox_exporter's probe_success and probe_duration_seconds.
const (
	// Success is `vllm_probe_success`.
	Success     = "vllm_probe_success"
	SuccessHelp = "Whether this one probe request was accepted (1) or not (0)."

	// Duration is `vllm_probe_duration_seconds`.
	Duration     = "vllm_probe_duration_seconds"
	DurationHelp = "Client-side duration of this one probe request: its E2EL when its stream finished, else the time from send to its end."
)

// The prober's own metrics.
const (
	// Program is the namespace of the prober's own metrics; client_golang's
	// version collector names vllm_prober_build_info from it.
	Program = "vllm_prober"

	// ConfigLastReloadSuccessful is `vllm_prober_config_last_reload_successful`.
	ConfigLastReloadSuccessful     = "vllm_prober_config_last_reload_successful"
	ConfigLastReloadSuccessfulHelp = "Whether the last configuration reload attempt was successful (1) or not (0)."

	// ConfigLastReloadSuccessTimestamp is `vllm_prober_config_last_reload_success_timestamp_seconds`.
	ConfigLastReloadSuccessTimestamp     = "vllm_prober_config_last_reload_success_timestamp_seconds"
	ConfigLastReloadSuccessTimestampHelp = "Unix time of the last successful configuration load."

	// DiscoveryFailures is `vllm_prober_discovery_failures_total`.
	DiscoveryFailures     = "vllm_prober_discovery_failures_total"
	DiscoveryFailuresHelp = "Replica discovery refreshes that failed, by target and mechanism (dns, file_sd, http_sd); the last good set of replicas is kept."

	// DiscoveryReplicas is `vllm_prober_discovery_replicas`.
	DiscoveryReplicas     = "vllm_prober_discovery_replicas"
	DiscoveryReplicasHelp = "Replicas a target's discovery currently probes (at most max_replicas)."

	// DiscoveryReplicasDropped is `vllm_prober_discovery_replicas_dropped_total`.
	DiscoveryReplicasDropped     = "vllm_prober_discovery_replicas_dropped_total"
	DiscoveryReplicasDroppedHelp = "Discovered replicas left unprobed because the target's max_replicas was reached, counted at every change of the discovered set that left them out."

	// LedgerWriteErrors is `vllm_prober_ledger_write_errors_total`.
	LedgerWriteErrors     = "vllm_prober_ledger_write_errors_total"
	LedgerWriteErrorsHelp = "Ledger records that could not be written."
)

// Server scrape metrics, per target.
const (
	// ServerScrapeSuccess is `vllm_probe_server_scrape_success`.
	ServerScrapeSuccess     = "vllm_probe_server_scrape_success"
	ServerScrapeSuccessHelp = "Whether the last scrape of the target's own /metrics succeeded (1) or not (0)."

	// ServerScrapeDuration is `vllm_probe_server_scrape_duration_seconds`.
	ServerScrapeDuration     = "vllm_probe_server_scrape_duration_seconds"
	ServerScrapeDurationHelp = "Duration of the last scrape of the target's own /metrics."

	// TargetInfo is `vllm_probe_target_info`.
	TargetInfo     = "vllm_probe_target_info"
	TargetInfoHelp = "The model a target serves (configured, or the first id of GET /v1/models) and its vLLM version (GET /version)."

	// ServerSeriesDropped is `vllm_prober_server_series_dropped_total`.
	ServerSeriesDropped     = "vllm_prober_server_series_dropped_total"
	ServerSeriesDroppedHelp = "Scraped server series not re-exported, counted at every scrape, by reason (limit, invalid_name, invalid_label, duplicate, conflict, reserved, unsupported_type)."
)

// vLLM's own metrics that the prober reads (re-exported with the target
// label by the server scraper), named once for the scraper and the rules.
const (
	// VLLMTimeToFirstToken is vLLM's server-side TTFT histogram.
	VLLMTimeToFirstToken = "vllm:time_to_first_token_seconds"
)
