package ledger

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
)

// ledgerFields are the ledger fields of docs/design.md, "Ledger", in order.
var ledgerFields = []string{
	"seq", "target", "probe", "request_id", "scheduled", "sent", "lag_s", "disposition", "reason", "flags",
	"http_status", "ttft_s", "ttfa_s", "tpot_s", "e2el_s", "itl_max_s", "prompt_tokens", "output_tokens", "chunks",
	"finish_reason", "model", "server", "reasoning_tokens", "tool_calls", "error",
}

var testEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fullResult returns a Result with every field set.
func fullResult() *probe.Result {
	return &probe.Result{
		Seq: 7, Target: "llama-8b", Probe: "chat-short", RequestID: "req-7",
		Scheduled: testEpoch, Sent: testEpoch.Add(1500 * time.Microsecond), Lag: 1500 * time.Microsecond,
		Disposition: probe.LatencyFailure, Reason: probe.ReasonLatency,
		SLOViolations: []string{probe.SLOTTFT}, QualityFailures: []string{probe.CheckRegex}, Flags: []string{"no_usage"},
		HTTPStatus: 200, TTFT: 1250 * time.Millisecond, TTFA: 1750 * time.Millisecond, TPOT: 20 * time.Millisecond, E2EL: 2500 * time.Millisecond,
		ITLs: []time.Duration{10 * time.Millisecond, 45 * time.Millisecond}, ITLTokens: []int{1, 2},
		PromptTokens: 128, OutputTokens: 64, Chunks: 63, FinishReason: "length", Model: "llama",
		Server:          &probe.ServerTiming{QueueTime: 250 * time.Millisecond, TTFT: 900 * time.Millisecond},
		ReasoningTokens: 24, ToolCalls: []probe.ToolCall{{ID: "call-1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		Error: "", Text: "hello", Reasoning: "thinking",
	}
}

func TestRecordFieldNames(t *testing.T) {
	capacity := fullResult()
	capacity.Level, capacity.Repeat = 8, 2
	fingerprinted := fullResult()
	fingerprinted.Fingerprint = &probe.OutputFingerprint{Prompt: 1, Hash: "0123456789abcdef"}
	for _, tc := range []struct {
		name       string
		res        *probe.Result
		recordText string
		want       []string
	}{
		{"without text", fullResult(), config.RecordTextNone, append(slices.Clone(ledgerFields), "run_id")},
		{"with text", fullResult(), config.RecordTextAll, append(slices.Clone(ledgerFields), "text", "run_id")},
		{"capacity run", capacity, config.RecordTextNone, append(slices.Clone(ledgerFields), "level", "repeat", "run_id")},
		{"no reasoning, no tool calls", &probe.Result{}, config.RecordTextNone, append(slices.DeleteFunc(slices.Clone(ledgerFields),
			func(f string) bool { return f == "reasoning_tokens" || f == "tool_calls" }), "run_id")},
		{"fingerprint probe", fingerprinted, config.RecordTextAll, append(slices.Clone(ledgerFields), "fingerprint", "text", "run_id")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, err := json.Marshal(NewRecord(tc.res, tc.recordText))
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.Token() // {
			for dec.More() {
				k, _ := dec.Token()
				keys = append(keys, k.(string))
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(keys, tc.want) {
				t.Errorf("keys\n got %v\nwant %v", keys, tc.want)
			}
		})
	}
}

func TestRecordGolden(t *testing.T) {
	unsent := &probe.Result{Seq: 8, Target: "llama-8b", Probe: "chat-short", Scheduled: testEpoch.Add(time.Second),
		Disposition: probe.Cancelled, Reason: probe.ReasonInFlightCap}
	accepted := fullResult()
	accepted.Disposition, accepted.Reason = probe.Accepted, ""
	accepted.SLOViolations, accepted.QualityFailures, accepted.Flags, accepted.Server = nil, nil, nil, nil
	fingerprinted := fullResult()
	fingerprinted.Fingerprint = &probe.OutputFingerprint{Prompt: 1, Hash: "0123456789abcdef", Changed: true}
	failed := &probe.Result{Seq: 9, Target: "t", Probe: "p", RequestID: "req-9", Scheduled: testEpoch,
		Sent: testEpoch.Add(time.Millisecond), Lag: time.Millisecond, Disposition: probe.ServerFailure,
		Reason: probe.ReasonHTTP5xx, HTTPStatus: 503, Error: "http status 503", Text: "overloaded"}
	// A failed tool call's record shows the calls judged, after the text.
	badCall := &probe.Result{Seq: 10, Target: "t", Probe: "tools", RequestID: "req-10", Scheduled: testEpoch,
		Sent: testEpoch.Add(time.Millisecond), Lag: time.Millisecond, Disposition: probe.QualityFailure,
		Reason: probe.ReasonQuality, QualityFailures: []string{probe.CheckToolCall}, HTTPStatus: 200,
		FinishReason: "tool_calls", Text: "Checking.", ToolCalls: []probe.ToolCall{
			{ID: "call-1", Name: "get_weather", Arguments: `{"city": "Paris"}`},
			{ID: "call-2", Name: "get_time", Arguments: `{"city": `}}}
	cases := []struct {
		res        *probe.Result
		recordText string
	}{
		{fullResult(), config.RecordTextNone},
		{unsent, config.RecordTextFailures},
		{accepted, config.RecordTextFailures},
		{accepted, config.RecordTextAll},
		{failed, config.RecordTextFailures},
		{fingerprinted, config.RecordTextNone},
		{badCall, config.RecordTextFailures},
	}
	var got bytes.Buffer
	for _, c := range cases {
		line, err := json.Marshal(NewRecord(c.res, c.recordText))
		if err != nil {
			t.Fatal(err)
		}
		// run_id is random per process: checked here, then cut so the
		// golden file holds what is stable.
		runIDField := []byte(`,"run_id":"` + RunID() + `"}`)
		if !bytes.HasSuffix(line, runIDField) {
			t.Errorf("record does not end with %s: %s", runIDField, line)
		}
		line = append(bytes.TrimSuffix(line, runIDField), '}')
		got.Write(append(line, '\n'))
	}
	testfile.CompareGolden(t, filepath.Join("testdata", "ledger_golden.jsonl"), got.String())
}

func TestRecordRoundTrip(t *testing.T) {
	want := NewRecord(fullResult(), config.RecordTextAll)
	line, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	recs, torn, err := readRecords(bytes.NewReader(append(line, '\n')))
	if err != nil || torn != 0 || len(recs) != 1 {
		t.Fatalf("readRecords = %d records, %d torn, %v", len(recs), torn, err)
	}
	again, _ := json.Marshal(recs[0])
	if !bytes.Equal(again, line) {
		t.Errorf("round trip changed the record\n got %s\nwant %s", again, line)
	}
}

func TestReadLedgerTorn(t *testing.T) {
	good := func(seq int) string {
		line, _ := json.Marshal(Record{Seq: uint64(seq), Target: "t", Probe: "p", Disposition: probe.Accepted})
		return string(line) + "\n"
	}
	for _, tc := range []struct {
		name     string
		content  string
		wantSeqs []uint64
		wantTorn int
	}{
		{"empty file", "", nil, 0},
		{"whole records", good(1) + good(2), []uint64{1, 2}, 0},
		{"torn last line", good(1) + good(2) + `{"seq":3,"tar`, []uint64{1, 2}, 1},
		{"last line without newline", good(1) + strings.TrimSuffix(good(2), "\n"), []uint64{1}, 1},
		{"partial line ended by recovery", good(1) + `{"seq":2` + "\n" + good(3), []uint64{1, 3}, 1},
		{"blank lines", good(1) + "\n\n" + good(2), []uint64{1, 2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testfile.Temp(t, "ledger.jsonl", tc.content)
			recs, torn, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []uint64
			for _, r := range recs {
				seqs = append(seqs, r.Seq)
			}
			if !slices.Equal(seqs, tc.wantSeqs) || torn != tc.wantTorn {
				t.Errorf("seqs %v torn %d, want %v torn %d", seqs, torn, tc.wantSeqs, tc.wantTorn)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if _, _, err := Read(filepath.Join(t.TempDir(), "nope")); err == nil {
			t.Error("no error for a missing file")
		}
	})
}

// TestRunID checks the form of the process's run id: 16 hex digits, the
// same in every record, different in another process (drawn again here).
func TestRunID(t *testing.T) {
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(RunID()) {
		t.Errorf("RunID() = %q, want 16 hex digits", RunID())
	}
	if a, b := NewRecord(fullResult(), ""), NewRecord(&probe.Result{}, ""); a.RunID != RunID() || b.RunID != RunID() {
		t.Errorf("records carry run_id %q and %q, want %q", a.RunID, b.RunID, RunID())
	}
	if newRunID() == RunID() {
		t.Error("a new run id repeats this process's")
	}
}

// TestRecordGivenUpHasNoEnd: a request given up before its stream ended,
// or whose stream failed (bench's vLLM timing keeps a partial E2EL and
// TPOT in the Result), is recorded with e2el_s and tpot_s null and the
// TTFT it measured.
func TestRecordGivenUpHasNoEnd(t *testing.T) {
	for _, d := range []probe.Disposition{probe.ClientTimeout, probe.Cancelled, probe.Unfinished, probe.ServerFailure} {
		t.Run(string(d), func(t *testing.T) {
			r := fullResult()
			r.Disposition = d
			rec := NewRecord(r, config.RecordTextNone)
			if rec.E2ELS != nil || rec.TPOTS != nil || rec.TTFTS == nil {
				t.Errorf("e2el_s %v tpot_s %v ttft_s %v, want null, null and the measured TTFT", rec.E2ELS, rec.TPOTS, rec.TTFTS)
			}
		})
	}
}

// TestRecordServerTimeAbsent: a server time the response did not carry is
// null in the ledger, not 0 (a queue time of 0 is a request scheduled at
// once), and stays null through history.
func TestRecordServerTimeAbsent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server probe.ServerTiming
		want   string
	}{
		{"no queue time", probe.ServerTiming{QueueTime: -1, TTFT: 900 * time.Millisecond}, `"server":{"queue_s":null,"ttft_s":0.9}`},
		{"scheduled at once, no ttft", probe.ServerTiming{}, `"server":{"queue_s":0,"ttft_s":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fullResult()
			r.Server = &tc.server
			b, err := json.Marshal(NewRecord(r, config.RecordTextNone))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.want) {
				t.Errorf("record %s, want %s", b, tc.want)
			}
		})
	}
}

// TestRecordEmbeddingsFailureKeepsEnd: an embeddings request that failed
// after its whole body was read keeps the E2EL it measured.
func TestRecordEmbeddingsFailureKeepsEnd(t *testing.T) {
	r := fullResult()
	r.Embeddings, r.Disposition, r.Reason = true, probe.ServerFailure, probe.ReasonProtocol
	if rec := NewRecord(r, config.RecordTextNone); rec.E2ELS == nil || *rec.E2ELS != r.E2EL.Seconds() {
		t.Errorf("e2el_s %v, want %v", rec.E2ELS, r.E2EL.Seconds())
	}
}
