package history

import (
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// entry is one kept record in a compact form: its pair's names are the
// ring's (pairHistory.key), its optional numbers are values with a flag
// rather than pointers, and the process's run ID is not repeated. A
// 16-token answer's ledger.Record is ~640 bytes with what it points to;
// its entry ~370 with its request ID (TestHistoryBytesPerResult), which a
// full history of 1,000 pairs × 200 records feels (docs/BENCHMARKS.md,
// "1,000 pairs"). record gives the Record back exactly as
// ledger.NewRecord made it (TestEntryRoundTrip).
type entry struct {
	ord, seq                        uint64
	scheduledSec, sentSec           int64
	scheduledNsec, sentNsec         int32
	httpStatus, promptTokens        int32
	outputTokens, chunks            int32
	reasoningTokens, toolCalls      int32
	repeat                          int32
	has                             fields
	lag, ttft, ttfa, tpot, e2el     float64
	itlMax, serverQueue, serverTTFT float64
	level                           float64
	requestID, reason, finishReason string
	model, errText, fingerprint     string
	disposition                     probe.Disposition
	flags                           []string
	text                            *string
	full                            *ledger.Record // a record that does not fit (fits): kept as it is
}

// fields says which optional fields of a Record an entry has.
type fields uint16

const (
	hasSent fields = 1 << iota
	hasTTFT
	hasTTFA
	hasTPOT
	hasE2EL
	hasITLMax
	hasServer
	hasCapacity // Level and Repeat
)

// newEntry is rec in compact form; rec's Target, Probe, Replica are its
// pair's and its RunID this process's.
func newEntry(ord uint64, rec *ledger.Record) entry {
	if !fits(rec) {
		return entry{ord: ord, full: rec}
	}
	e := entry{
		ord: ord, seq: rec.Seq,
		scheduledSec: rec.Scheduled.Unix(), scheduledNsec: int32(rec.Scheduled.Nanosecond()),
		httpStatus: int32(rec.HTTPStatus), promptTokens: int32(rec.PromptTokens), outputTokens: int32(rec.OutputTokens),
		chunks: int32(rec.Chunks), reasoningTokens: int32(rec.ReasoningTokens), toolCalls: int32(rec.ToolCalls),
		requestID: rec.RequestID, reason: rec.Reason, finishReason: rec.FinishReason, model: rec.Model,
		errText: rec.Error, fingerprint: rec.Fingerprint, disposition: rec.Disposition, flags: rec.Flags, text: rec.Text,
	}
	if rec.Sent != nil {
		e.has |= hasSent
		e.sentSec, e.sentNsec, e.lag = rec.Sent.Unix(), int32(rec.Sent.Nanosecond()), *rec.LagS
	}
	for _, o := range []struct {
		v    *float64
		to   *float64
		flag fields
	}{{rec.TTFTS, &e.ttft, hasTTFT}, {rec.TTFAS, &e.ttfa, hasTTFA}, {rec.TPOTS, &e.tpot, hasTPOT}, {rec.E2ELS, &e.e2el, hasE2EL}, {rec.ITLMaxS, &e.itlMax, hasITLMax}} {
		if o.v != nil {
			e.has |= o.flag
			*o.to = *o.v
		}
	}
	if rec.Server != nil {
		e.has |= hasServer
		e.serverQueue, e.serverTTFT = rec.Server.QueueS, rec.Server.TTFTS
	}
	if rec.Level != nil && rec.Repeat != nil {
		e.has |= hasCapacity
		e.level, e.repeat = *rec.Level, int32(*rec.Repeat)
	}
	return e
}

// fits reports whether rec can be kept as an entry without loss: its
// counts fit 32 bits and it has both capacity fields or neither.
func fits(rec *ledger.Record) bool {
	for _, n := range []int{rec.HTTPStatus, rec.PromptTokens, rec.OutputTokens, rec.Chunks, rec.ReasoningTokens, rec.ToolCalls} {
		if int(int32(n)) != n {
			return false
		}
	}
	if (rec.Level == nil) != (rec.Repeat == nil) {
		return false
	}
	return rec.Repeat == nil || int(int32(*rec.Repeat)) == *rec.Repeat
}

// record is e as the ledger.Record it was made from, of the pair named
// target, probeName and replica.
func (e *entry) record(target, probeName, replica string) ledger.Record {
	if e.full != nil {
		return *e.full
	}
	rec := ledger.Record{
		Seq: e.seq, Target: target, Probe: probeName, Replica: replica, RequestID: e.requestID,
		Scheduled:   time.Unix(e.scheduledSec, int64(e.scheduledNsec)).UTC(),
		Disposition: e.disposition, Reason: e.reason, Flags: e.flags, HTTPStatus: int(e.httpStatus),
		PromptTokens: int(e.promptTokens), OutputTokens: int(e.outputTokens), Chunks: int(e.chunks),
		FinishReason: e.finishReason, Model: e.model, ReasoningTokens: int(e.reasoningTokens), ToolCalls: int(e.toolCalls),
		Error: e.errText, Fingerprint: e.fingerprint, Text: e.text, RunID: ledger.RunID(),
	}
	opt := func(flag fields, v float64) *float64 {
		if e.has&flag == 0 {
			return nil
		}
		return &v
	}
	if e.has&hasSent != 0 {
		sent := time.Unix(e.sentSec, int64(e.sentNsec)).UTC()
		rec.Sent, rec.LagS = &sent, opt(hasSent, e.lag)
	}
	rec.TTFTS, rec.TTFAS, rec.TPOTS = opt(hasTTFT, e.ttft), opt(hasTTFA, e.ttfa), opt(hasTPOT, e.tpot)
	rec.E2ELS, rec.ITLMaxS = opt(hasE2EL, e.e2el), opt(hasITLMax, e.itlMax)
	if e.has&hasServer != 0 {
		rec.Server = &ledger.ServerRecord{QueueS: e.serverQueue, TTFTS: e.serverTTFT}
	}
	if e.has&hasCapacity != 0 {
		level, repeat := e.level, int(e.repeat)
		rec.Level, rec.Repeat = &level, &repeat
	}
	return rec
}
