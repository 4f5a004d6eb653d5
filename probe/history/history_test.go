package history

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/memtest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// testEpoch is when every test request was scheduled.
var testEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func histResult(target, probeName string, seq int, d probe.Disposition) *probe.Result {
	return &probe.Result{Seq: uint64(seq), Target: target, Probe: probeName, Scheduled: testEpoch, Disposition: d, Text: "out"}
}

func recSeqs(recs []ledger.Record) []uint64 {
	out := make([]uint64, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

func TestHistory(t *testing.T) {
	h := New(5)
	// a/x: seq 1..12, failures at 2 and 3 (aged out of the ring of 5) and 11.
	for seq := 1; seq <= 12; seq++ {
		d := probe.Accepted
		if seq == 2 || seq == 3 || seq == 11 {
			d = probe.ServerFailure
		}
		h.Add(histResult("a", "x", seq, d))
		if seq == 6 || seq == 10 {
			h.Add(histResult("b", "y", 100+seq, probe.QualityFailure))
		}
	}
	for _, tc := range []struct {
		name string
		got  []ledger.Record
		want []uint64
	}{
		{"recent ring keeps the last limit, newest first", h.Recent("a", "x", 0), []uint64{12, 11, 10, 9, 8}},
		{"recent limited", h.Recent("a", "x", 2), []uint64{12, 11}},
		{"failures outlive the ring", h.LastFailures("a", "x", 0), []uint64{11, 3, 2}},
		{"failures limited", h.LastFailures("a", "x", 1), []uint64{11}},
		{"any pair merges newest first", h.Recent("", "", 4), []uint64{12, 11, 110, 10}},
		{"any target of one probe", h.Recent("", "y", 0), []uint64{110, 106}},
		{"any probe of one target", h.LastFailures("b", "", 0), []uint64{110, 106}},
		{"all failures", h.LastFailures("", "", 0), []uint64{11, 110, 106, 3, 2}},
		{"unknown pair", h.Recent("a", "y", 0), []uint64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recSeqs(tc.got); !slices.Equal(got, tc.want) {
				t.Errorf("seqs %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("text only for failures", func(t *testing.T) {
		for _, r := range h.Recent("a", "x", 0) {
			if (r.Text != nil) != (r.Disposition != probe.Accepted) {
				t.Errorf("seq %d (%s): text %v", r.Seq, r.Disposition, r.Text)
			}
		}
	})
	t.Run("stopping a pair drops it", func(t *testing.T) {
		h.PairStopped(config.PairKey{Target: "b", Probe: "y"})
		if got := h.Recent("b", "y", 0); len(got) != 0 {
			t.Errorf("%d records after PairStopped", len(got))
		}
	})
}

func TestHistoryFailuresBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{
		{"small limit", 3, 3},
		{"capped", 500, maxKeptFailures},
		{"default limit", 0, maxKeptFailures},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(tc.limit)
			for seq := 1; seq <= 600; seq++ {
				h.Add(histResult("t", "p", seq, probe.ClientTimeout))
			}
			got := h.LastFailures("t", "p", 0)
			if len(got) != tc.want || got[0].Seq != 600 {
				t.Errorf("%d failures kept, newest %d; want %d, newest 600", len(got), got[0].Seq, tc.want)
			}
		})
	}
}

func TestHistoryTextCut(t *testing.T) {
	h := New(1)
	r := histResult("t", "p", 1, probe.QualityFailure)
	r.Text = strings.Repeat("é", historyTextBytes) // 2 bytes each
	h.Add(r)
	text := *h.Recent("t", "p", 1)[0].Text
	if len(text) > historyTextBytes || !strings.HasPrefix(r.Text, text) || len(text) < historyTextBytes-1 {
		t.Errorf("kept %d bytes, want a rune-aligned prefix of at most %d", len(text), historyTextBytes)
	}
}

func TestHistoryConcurrent(t *testing.T) {
	h := New(50)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				h.Add(histResult(fmt.Sprint("t", w%2), "p", i, probe.Accepted))
				h.Recent("", "p", 10)
				h.LastFailures("t0", "", 10)
			}
		})
	}
	wg.Wait()
	if got := len(h.Recent("", "", 0)); got != 100 {
		t.Errorf("%d records kept across two pairs of 50, want 100", got)
	}
	var nilHistory *History
	nilHistory.Add(histResult("t", "p", 1, probe.Accepted))
	if nilHistory.Recent("", "", 0) != nil {
		t.Error("nil history returned records")
	}
}

// TestHistoryKeepsLikeRings: with failures in runs and alone, the records
// kept are those of two plain rings: the last limit results, and the last
// min(limit, 50) failures, whatever arena holds them.
func TestHistoryKeepsLikeRings(t *testing.T) {
	for _, limit := range []int{1, 3, 7, 60, 200} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			h := New(limit)
			var all, failures []uint64
			for seq := 1; seq <= 700; seq++ {
				d := probe.Accepted
				if seq%7 == 0 || seq%100 < 70 && seq%100 >= 10 && seq%3 != 0 {
					d = probe.QualityFailure
					failures = append(failures, uint64(seq))
				}
				all = append(all, uint64(seq))
				h.Add(histResult("t", "p", seq, d))
				if seq%37 != 0 && seq != 700 {
					continue
				}
				want := slices.Clone(all[max(0, len(all)-limit):])
				slices.Reverse(want)
				if got := recSeqs(h.Recent("t", "p", 0)); !slices.Equal(got, want) {
					t.Fatalf("after %d: recent %v, want %v", seq, got, want)
				}
				want = slices.Clone(failures[max(0, len(failures)-min(limit, maxKeptFailures)):])
				slices.Reverse(want)
				if got := recSeqs(h.LastFailures("t", "p", 0)); !slices.Equal(got, want) {
					t.Fatalf("after %d: failures %v, want %v", seq, got, want)
				}
			}
		})
	}
}

// TestHistoryReadsWhileAdding: records read while another goroutine adds
// failures (which move entries between a pair's arenas and copy them to
// new buffers) decode whole, and the race detector sees no write to their
// bytes.
func TestHistoryReadsWhileAdding(t *testing.T) {
	const added = 1200
	h := New(20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for seq := range added {
			d := probe.Accepted
			if seq%3 == 0 {
				d = probe.ServerFailure
			}
			h.Add(histResult("t", "p", seq, d))
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		for _, r := range append(h.Recent("t", "p", 0), h.LastFailures("t", "p", 0)...) {
			if r.Target != "t" || (r.Text == nil) != (r.Disposition == probe.Accepted) || r.Seq >= added {
				t.Fatalf("record %+v", r)
			}
		}
	}
}

// TestHistorySink checks that a pair's results are kept while it runs,
// and that those its requests deliver after it stopped are not kept.
func TestHistorySink(t *testing.T) {
	h := New(10)
	pair := config.Pair{Key: config.PairKey{Target: "t", Probe: "p"}}
	h.Finished(histResult("t", "p", 1, probe.Accepted))
	if got := len(h.Recent("t", "p", 0)); got != 0 {
		t.Errorf("%d records of a pair never started, want 0", got)
	}
	h.PairStarted(pair)
	h.Finished(histResult("t", "p", 2, probe.Accepted))
	if got := len(h.Recent("t", "p", 0)); got != 1 {
		t.Errorf("%d records of a running pair, want 1", got)
	}
	h.PairStopped(pair.Key)
	h.Finished(histResult("t", "p", 3, probe.Accepted))
	if got := len(h.Recent("t", "p", 0)); got != 0 {
		t.Errorf("%d records after the pair stopped, want 0", got)
	}
	h.PairStarted(pair)
	h.Finished(histResult("t", "p", 4, probe.Accepted))
	if got := h.Recent("t", "p", 0); len(got) != 1 || got[0].Seq != 4 {
		t.Errorf("records of the re-added pair = %+v, want seq 4 only", got)
	}
}

// TestHistoryReplicaMatch: a fleet's gateway pair and two replica pairs of
// one target and probe; Replica "" selects the gateway's records only,
// AnyReplica all three pairs', a host:port that replica's.
func TestHistoryReplicaMatch(t *testing.T) {
	h := New(10)
	add := func(seq int, replica string, d probe.Disposition) {
		r := histResult("fleet", "chat", seq, d)
		r.Replica = replica
		h.Add(r)
	}
	add(1, "", probe.Accepted)
	add(2, "10.0.0.1:8000", probe.ServerFailure)
	add(3, "", probe.ServerFailure)
	add(4, "10.0.0.2:8000", probe.Accepted)
	add(5, "10.0.0.1:8000", probe.Accepted)
	h.Add(histResult("static", "chat", 6, probe.ServerFailure))
	for _, tc := range []struct {
		name string
		got  []ledger.Record
		want []uint64
	}{
		{"gateway only", h.RecentOf(Match{"fleet", "chat", ""}, 0), []uint64{3, 1}},
		{"gateway limited", h.RecentOf(Match{"fleet", "chat", ""}, 1), []uint64{3}},
		{"every replica and the gateway", h.RecentOf(Match{"fleet", "chat", AnyReplica}, 0), []uint64{5, 4, 3, 2, 1}},
		{"one replica", h.RecentOf(Match{"fleet", "chat", "10.0.0.1:8000"}, 0), []uint64{5, 2}},
		{"gateway failures", h.LastFailuresOf(Match{"fleet", "chat", ""}, 0), []uint64{3}},
		{"replica failures", h.LastFailuresOf(Match{"fleet", "chat", "10.0.0.1:8000"}, 0), []uint64{2}},
		{"any target without replicas", h.RecentOf(Match{"", "chat", ""}, 0), []uint64{6, 3, 1}},
		{"Recent takes every replica", h.Recent("fleet", "chat", 0), []uint64{5, 4, 3, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recSeqs(tc.got); !slices.Equal(got, tc.want) {
				t.Errorf("seqs %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEntryRoundTrip: what the history gives back is exactly the record
// ledger.NewRecord makes of each kind of result (the failures' text cut
// to 1 KiB aside): sent or never sent, every optional number set or not,
// server timing (with a time left out or not), flags, a fingerprint, a capacity run's level (a whole
// number of nanoseconds or not), a count past 32 bits, a zero schedule
// time, a negative lag, request IDs with and without a hexadecimal tail,
// and more distinct errors and flags than a pair's names table keeps.
func TestEntryRoundTrip(t *testing.T) {
	sent := testEpoch.Add(3 * time.Millisecond)
	results := []*probe.Result{
		{Seq: 1, RequestID: "chatcmpl-1", Scheduled: testEpoch, Sent: sent, Lag: 3 * time.Millisecond, Disposition: probe.Accepted,
			HTTPStatus: 200, TTFT: 20 * time.Millisecond, TTFA: 25 * time.Millisecond, TPOT: 5 * time.Millisecond, E2EL: 100 * time.Millisecond,
			ITLs: []time.Duration{4 * time.Millisecond, 6 * time.Millisecond}, PromptTokens: 128, OutputTokens: 16, Chunks: 16,
			FinishReason: "length", Model: "sim-llama", Server: &probe.ServerTiming{TTFT: 10 * time.Millisecond, QueueTime: time.Millisecond},
			ReasoningTokens: 3, ToolCalls: []probe.ToolCall{{Name: "f"}}, Fingerprint: &probe.OutputFingerprint{Hash: "abc"}},
		{Seq: 2, RequestID: "r2", Scheduled: testEpoch, Disposition: probe.Cancelled, Error: "never sent"},
		{Seq: 7, RequestID: "r7", Scheduled: testEpoch, Sent: sent, Disposition: probe.Accepted, E2EL: time.Second,
			Server: &probe.ServerTiming{QueueTime: -1, TTFT: 10 * time.Millisecond}}, // no queue time: null
		{Seq: 8, RequestID: "r8", Scheduled: testEpoch, Sent: sent, Disposition: probe.Accepted, E2EL: time.Second,
			Server: &probe.ServerTiming{}}, // scheduled at once, no TTFT
		{Seq: 3, RequestID: "r3", Scheduled: testEpoch, Sent: sent, Disposition: probe.LatencyFailure, Reason: probe.ReasonLatency,
			SLOViolations: []string{probe.SLOTTFT}, QualityFailures: []string{probe.CheckRegex}, Flags: []string{"no_usage"},
			TTFT: 2 * time.Second, Text: "an answer"},
		{Seq: 4, RequestID: "r4", Scheduled: testEpoch, Sent: sent, Disposition: probe.ClientTimeout, E2EL: time.Second, Level: 2.5, Repeat: 3},
		{Seq: 5, RequestID: "r5", Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx, HTTPStatus: 503, PromptTokens: 1 << 40},
		{Seq: 6, RequestID: "r6", Scheduled: testEpoch.Add(time.Nanosecond), Sent: testEpoch, Lag: -time.Nanosecond,
			Disposition: probe.Accepted, E2EL: 1<<40 + 1, Level: 1.0 / 3, Repeat: 1},
	}
	for i, id := range []string{"chatcmpl-0123456789abcdef0123456789abcdef", "cmpl-0123456789abcdef0", "0123456789abcdef",
		"chatcmpl-0123456789ABCDEF0123456789ABCDEF", "cmpl-0123456789abcde", "x-0123456789abcdef-", "",
		// The prober's own (kept as their nonce) and near misses of it.
		"t-p-100-0000002a", "t-p-101-ffffffff", "t-p-102-0000002A", "t-p-103-02a", "t-p-3-0000002a", "t-q-105-0000002a",
		"t-p-106-+000002a", "t-p-0107-0000002a"} {
		results = append(results, &probe.Result{Seq: uint64(100 + i), RequestID: id, Scheduled: testEpoch, Disposition: probe.Accepted})
	}
	for i := range 2 * maxNames {
		results = append(results, &probe.Result{Seq: uint64(7 + i), Scheduled: testEpoch, Disposition: probe.ServerFailure,
			Error: fmt.Sprintf("error %d", i), Flags: []string{fmt.Sprintf("flag %d", i)}})
	}
	h := New(len(results))
	var want []ledger.Record
	for _, r := range results {
		r.Target, r.Probe, r.Replica = "t", "p", "10.0.0.1:8000"
		h.Add(r)
		want = append(want, ledger.NewRecord(r, config.RecordTextFailures))
	}
	got := h.RecentOf(Match{Target: "t", Probe: "p", Replica: AnyReplica}, 0)
	slices.Reverse(got)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i+1, got[i], want[i])
		}
	}
}

// TestHistoryBytesPerResult: a full history keeps at most 120 bytes per
// 16-token accepted result with a server's request ID (vLLM's chatcmpl-
// and 32 digits; 628 as ledger records, 373 as the structs of fixed
// fields before the varint form), and at most 70 with the prober's own
// (probe.RequestID, kept as its nonce: 97 as a string), so 1,000 pairs ×
// the default 200 stay under ~14 MiB (docs/BENCHMARKS.md, "1,000 pairs").
func TestHistoryBytesPerResult(t *testing.T) {
	const pairs, kept = 100, 200
	for _, tc := range []struct {
		name string
		id   func(target, probeName string, seq uint64) string
		most float64
	}{
		{"server IDs", func(_, _ string, seq uint64) string { return fmt.Sprintf("chatcmpl-%032d", seq) }, 120},
		{"own IDs", func(target, probeName string, seq uint64) string {
			return probe.RequestID(target, probeName, seq, uint32(seq)*2654435761)
		}, 70},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(kept)
			per := memtest.HeapBytesPer(pairs*kept, func() any {
				for n := range kept {
					for i := range pairs {
						r := &probe.Result{Seq: uint64(n + 1), Target: fmt.Sprintf("target-%03d", i/10), Probe: fmt.Sprintf("chat-%d", i%10),
							Scheduled: testEpoch, Sent: testEpoch, Lag: time.Millisecond,
							Disposition: probe.Accepted, HTTPStatus: 200, TTFT: 20 * time.Millisecond, TPOT: 5 * time.Millisecond,
							E2EL: 100 * time.Millisecond, ITLs: make([]time.Duration, 15), PromptTokens: 128, OutputTokens: 16, Chunks: 16,
							FinishReason: string([]byte("length")), Model: string([]byte("sim-llama")), // decoded per response
							Server: &probe.ServerTiming{TTFT: 10 * time.Millisecond, QueueTime: time.Millisecond}}
						r.RequestID = tc.id(r.Target, r.Probe, r.Seq)
						h.Add(r)
					}
				}
				return h
			})
			t.Logf("%.0f bytes per kept result", per)
			if per > tc.most {
				t.Errorf("%.0f bytes per kept result, want at most %.0f", per, tc.most)
			}
		})
	}
}

// TestHistoryBytesPerFullPair: a pair's full history of 200 16-token
// results, one in ten a quality failure with its text, keeps at most
// 24,000 bytes (~22,300): each record in its pair's arena with 4 bytes of
// index, not an allocation and a slice header of its own in each ring it
// is in (25,472 bytes so). 1,000 such pairs: ~22 MB.
func TestHistoryBytesPerFullPair(t *testing.T) {
	const pairs, added = 100, 300
	h := New(200)
	text := strings.Repeat("token ", 16)
	per := memtest.HeapBytesPer(pairs, func() any {
		for n := range added {
			for i := range pairs {
				r := &probe.Result{Seq: uint64(n + 1), Target: fmt.Sprintf("t-%d", i/10), Probe: fmt.Sprintf("chat-%d", i%10),
					RequestID: fmt.Sprintf("chatcmpl-%032d", n), Scheduled: testEpoch, Sent: testEpoch, Lag: time.Millisecond,
					Disposition: probe.Accepted, HTTPStatus: 200, TTFT: time.Duration(20+n%7) * time.Millisecond, TPOT: 5 * time.Millisecond,
					E2EL: 100 * time.Millisecond, ITLs: make([]time.Duration, 15), PromptTokens: 128, OutputTokens: 16, Chunks: 16,
					FinishReason: string([]byte("length")), Model: string([]byte("sim-llama")), Text: text}
				if n%10 == 3 {
					r.Disposition, r.QualityFailures, r.Reason = probe.QualityFailure, []string{probe.CheckRegex}, "regex"
				}
				h.Add(r)
			}
		}
		return h
	})
	t.Logf("%.0f bytes per full pair", per)
	if per > 24000 {
		t.Errorf("%.0f bytes per full pair, want at most 24,000", per)
	}
}
