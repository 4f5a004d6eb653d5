package ledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Record is one ledger line: exactly the fields of docs/design.md, "Ledger".
// Durations are seconds; a duration that was not measured is null, so a
// reader can tell "not measured" from "zero".
type Record struct {
	Seq          uint64            `json:"seq"`
	Target       string            `json:"target"`
	Probe        string            `json:"probe"`
	Replica      string            `json:"replica,omitempty"` // a discovered replica's host:port
	RequestID    string            `json:"request_id"`
	Scheduled    time.Time         `json:"scheduled"`
	Sent         *time.Time        `json:"sent"` // null: never sent
	LagS         *float64          `json:"lag_s"`
	Disposition  probe.Disposition `json:"disposition"`
	Reason       string            `json:"reason"`
	Flags        []string          `json:"flags"` // slo:<name>, check:<name> and other diagnostics
	HTTPStatus   int               `json:"http_status"`
	TTFTS        *float64          `json:"ttft_s"`
	TTFAS        *float64          `json:"ttfa_s"` // first answer token, after any reasoning
	TPOTS        *float64          `json:"tpot_s"`
	E2ELS        *float64          `json:"e2el_s"`
	ITLMaxS      *float64          `json:"itl_max_s"`
	PromptTokens int               `json:"prompt_tokens"`
	OutputTokens int               `json:"output_tokens"`
	Chunks       int               `json:"chunks"`
	FinishReason string            `json:"finish_reason"`
	Model        string            `json:"model"`
	Server       *ServerRecord     `json:"server"` // null: the server sent no per-request metrics
	// ReasoningTokens and ToolCalls (the number of calls the answer made)
	// are present only when not zero.
	ReasoningTokens int    `json:"reasoning_tokens,omitempty"`
	ToolCalls       int    `json:"tool_calls,omitempty"`
	Error           string `json:"error"`
	// Fingerprint is the output fingerprint of a fingerprint probe's
	// request whose stream completed (docs/design.md, "Output
	// fingerprint"); absent otherwise.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Text is present only when the ledger's record_text asks for it.
	Text *string `json:"text,omitempty"`
	// Level and Repeat are present only in a capacity run's ledger.
	Level  *float64 `json:"level,omitempty"`
	Repeat *int     `json:"repeat,omitempty"`
	// RunID is the writing process's RunID, so a reader can tell a restart
	// (a new run_id, seq from 1) from lost records (a gap in seq).
	RunID string `json:"run_id"`
}

// ServerRecord is the server's own view of one request (vLLM's per-request
// metrics object), in seconds.
type ServerRecord struct {
	QueueS *float64 `json:"queue_s"` // null when the server sent no queue time
	TTFTS  *float64 `json:"ttft_s"`  // null when the server sent no TTFT
}

// Flag prefixes that fold SLO violations and failed quality checks into
// Record.Flags.
const (
	FlagSLOPrefix   = "slo:"
	FlagCheckPrefix = "check:"
)

// NewRecord converts a finished Result into its ledger record. recordText
// is config.Ledger.RecordText: "all" keeps the generated text, "failures"
// keeps it for requests not accepted, anything else drops it. Times are
// converted to UTC so every line of a ledger reads alike.
func NewRecord(r *probe.Result, recordText string) Record {
	rec := Record{
		Seq:             r.Seq,
		Target:          r.Target,
		Probe:           r.Probe,
		Replica:         r.Replica,
		RequestID:       r.RequestID,
		Scheduled:       r.Scheduled.UTC().Round(0),
		Disposition:     r.Disposition,
		Reason:          r.Reason,
		Flags:           recordFlags(r),
		HTTPStatus:      r.HTTPStatus,
		TTFTS:           optSeconds(r.TTFT),
		TTFAS:           optSeconds(r.TTFA),
		TPOTS:           optSeconds(finished(r, r.TPOT)),
		E2ELS:           optSeconds(finished(r, r.E2EL)),
		ITLMaxS:         optSeconds(r.ITLMax()),
		PromptTokens:    r.PromptTokens,
		OutputTokens:    r.OutputTokens,
		Chunks:          r.Chunks,
		FinishReason:    r.FinishReason,
		Model:           r.Model,
		Error:           r.Error,
		ReasoningTokens: r.ReasoningTokens,
		ToolCalls:       len(r.ToolCalls),
		RunID:           runID,
	}
	if !r.Sent.IsZero() {
		sent := r.Sent.UTC().Round(0)
		lag := r.Lag.Seconds()
		rec.Sent, rec.LagS = &sent, &lag
	}
	if r.Server != nil {
		rec.Server = &ServerRecord{}
		if r.Server.QueueTime >= 0 {
			q := r.Server.QueueTime.Seconds()
			rec.Server.QueueS = &q
		}
		if r.Server.TTFT > 0 {
			ttft := r.Server.TTFT.Seconds()
			rec.Server.TTFTS = &ttft
		}
	}
	if r.Fingerprint != nil {
		rec.Fingerprint = r.Fingerprint.Hash
	}
	if r.Repeat > 0 {
		level, repeat := r.Level, r.Repeat
		rec.Level, rec.Repeat = &level, &repeat
	}
	if recordText == config.RecordTextAll || (recordText == config.RecordTextFailures && r.Disposition != probe.Accepted) {
		text := r.AnswerText()
		rec.Text = &text
	}
	return rec
}

// recordFlags folds SLO violations and failed checks into one list that is
// never null.
func recordFlags(r *probe.Result) []string {
	flags := make([]string, 0, len(r.SLOViolations)+len(r.QualityFailures)+len(r.Flags))
	for _, s := range r.SLOViolations {
		flags = append(flags, FlagSLOPrefix+s)
	}
	for _, c := range r.QualityFailures {
		flags = append(flags, FlagCheckPrefix+c)
	}
	return append(flags, r.Flags...)
}

// optSeconds returns d in seconds, or nil when d was not measured (zero).
// finished returns d for a request that ran to its end and 0 for one
// whose stream was cut short: given up (client_timeout, cancelled,
// unfinished) or a streamed server_failure, which the client reads only
// until the failure and so never to [DONE]. The ledger keeps only what was
// measured, and a stream cut short has no end-to-end latency (bench's vLLM
// timing keeps one in the Result for vLLM's own block). An embeddings
// server_failure keeps the time its whole body took.
func finished(r *probe.Result, d time.Duration) time.Duration {
	switch r.Disposition {
	case probe.ClientTimeout, probe.Cancelled, probe.Unfinished:
		return 0
	case probe.ServerFailure:
		if !r.Embeddings {
			return 0
		}
	}
	return d
}

func optSeconds(d time.Duration) *float64 {
	if d == 0 {
		return nil
	}
	s := d.Seconds()
	return &s
}

// Read reads every record of one ledger file. A line that is not a
// whole record (the last line after a crash, or the remains of a failed
// write) is skipped and counted in torn; err is only for I/O errors.
func Read(path string) (recs []Record, torn int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read ledger: %w", err)
	}
	defer f.Close()
	recs, torn, err = readRecords(f)
	if err != nil {
		return recs, torn, fmt.Errorf("read ledger %s: %w", path, err)
	}
	return recs, torn, nil
}

// readRecords decodes JSON Lines from r; lines may be of any length.
func readRecords(r io.Reader) ([]Record, int, error) {
	var (
		recs []Record
		torn int
	)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var rec Record
			// A line without its newline was cut short, even if it parses.
			if !bytes.HasSuffix(line, []byte("\n")) || json.Unmarshal(line, &rec) != nil {
				torn++
			} else {
				recs = append(recs, rec)
			}
		}
		if err == io.EOF {
			return recs, torn, nil
		}
		if err != nil {
			return recs, torn, err
		}
	}
}
