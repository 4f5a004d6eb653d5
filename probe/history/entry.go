package history

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// entry is one kept record: its order among the records of all pairs and
// the record's fields as varints, bytes of its pair's arena the GC need
// not scan. Its pair's names are its pair's key in History.pairs; the
// strings that repeat (disposition, reason, finish reason, model, error,
// flags) are indexes into the pair's names table; numbers of seconds that
// are whole nanoseconds (every latency) are varints of nanoseconds; a
// request ID the prober made (probe.RequestID: the pair's names, the seq
// and a nonce) is kept as its 4-byte nonce, another's hexadecimal tail as
// bytes; the process's run ID is not repeated. A 16-token answer's
// ledger.Record is ~640 bytes with what it points to, its entry ~85 with a
// server's request ID and ~66 with the prober's own, index included
// (TestHistoryBytesPerResult), which a full history of 1,000 pairs × 200
// records feels (docs/BENCHMARKS.md, "1,000 pairs"). record gives the
// Record back exactly as ledger.NewRecord made it (TestEntryRoundTrip).
type entry struct{ b []byte }

// ord is e's order among the records of all pairs.
func (e entry) ord() uint64 {
	v, _ := binary.Uvarint(e.b)
	return v
}

// fields says which pointer fields of a Record an entry has.
type fields uint64

const (
	hasSent fields = 1 << iota
	hasServer
	hasLevel
	hasRepeat
	hasText
	hasOwnID // the request ID is probe.RequestID of the record's pair and seq
)

// maxNames bounds a pair's names table; strings past it are kept inline.
const maxNames = 32

// names is a pair's table of the strings its records repeat. It only
// grows, so a copy of its slice taken under the History's lock stays
// valid for the entries of that time.
type names []string

// index returns s's index in n, adding it while there is room; ok is
// false when s is not in a full table.
func (n *names) index(s string) (i int, ok bool) {
	for i, t := range *n {
		if t == s {
			return i, true
		}
	}
	if len(*n) == maxNames {
		return 0, false
	}
	*n = append(*n, strings.Clone(s))
	return len(*n) - 1, true
}

// encoder appends a record's fields to buf.
type encoder struct {
	buf   []byte
	names *names
}

func (e *encoder) uint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) int(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }

// str appends s inline: its length shifted left once, then its bytes.
func (e *encoder) str(s string) {
	e.uint(uint64(len(s)) << 1)
	e.buf = append(e.buf, s...)
}

// name appends s as its index in the names table (odd), or inline when
// the table is full.
func (e *encoder) name(s string) {
	if i, ok := e.names.index(s); ok {
		e.uint(uint64(i)<<1 | 1)
		return
	}
	e.str(s)
}

// id appends a request ID: the length of its prefix shifted left once,
// odd when a hexadecimal tail (lower case, an even number of at least 16
// digits, as vLLM's) follows as its length in bytes and the bytes.
func (e *encoder) id(s string) {
	tail := len(s)
	for tail > 0 && (s[tail-1] >= '0' && s[tail-1] <= '9' || s[tail-1] >= 'a' && s[tail-1] <= 'f') {
		tail--
	}
	if (len(s)-tail)%2 == 1 {
		tail++
	}
	if len(s)-tail < 16 {
		e.str(s)
		return
	}
	e.uint(uint64(tail)<<1 | 1)
	e.buf = append(e.buf, s[:tail]...)
	e.uint(uint64(len(s)-tail) / 2)
	e.buf, _ = hex.AppendDecode(e.buf, []byte(s[tail:])) // every digit checked above
}

// seconds appends an optional number of seconds: 0 for none, 1 and its
// bits, or 2 + the zigzag of its nanoseconds when time.Duration's Seconds
// of those gives it back exactly.
func (e *encoder) seconds(v *float64) {
	switch {
	case v == nil:
		e.uint(0)
	case math.Abs(*v) < 1<<32:
		n := int64(math.Round(*v * 1e9))
		if math.Float64bits(time.Duration(n).Seconds()) == math.Float64bits(*v) {
			e.uint(2 + (uint64(n<<1) ^ uint64(n>>63)))
			return
		}
		fallthrough
	default:
		e.uint(1)
		e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(*v))
	}
}

// decoder reads what an encoder wrote.
type decoder struct {
	b     []byte
	names names
}

func (d *decoder) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	d.b = d.b[max(n, 0):]
	return v
}

func (d *decoder) int() int64 {
	v, n := binary.Varint(d.b)
	d.b = d.b[max(n, 0):]
	return v
}

func (d *decoder) str() string {
	v := d.uint()
	if v&1 == 1 {
		return d.names[v>>1]
	}
	n := min(int(v>>1), len(d.b))
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) id() string {
	v := d.uint()
	n := min(int(v>>1), len(d.b))
	if v&1 == 0 {
		s := string(d.b[:n])
		d.b = d.b[n:]
		return s
	}
	prefix := d.b[:n]
	d.b = d.b[n:]
	m := min(int(d.uint()), len(d.b))
	s := string(hex.AppendEncode(prefix[:n:n], d.b[:m]))
	d.b = d.b[m:]
	return s
}

func (d *decoder) seconds() *float64 {
	var v float64
	switch t := d.uint(); t {
	case 0:
		return nil
	case 1:
		v = math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
	default:
		zz := t - 2
		v = time.Duration(int64(zz>>1) ^ -int64(zz&1)).Seconds()
	}
	return &v
}

// encodeEntry returns scratch with rec encoded in it, its repeated strings
// in n; rec's Target, Probe, Replica are its pair's and its RunID this
// process's.
func encodeEntry(ord uint64, rec *ledger.Record, n *names, scratch []byte) []byte {
	nonce, own := probe.RequestNonce(rec.RequestID, rec.Target, rec.Probe, rec.Seq)
	var has fields
	for _, o := range []struct {
		set  bool
		flag fields
	}{{rec.Sent != nil, hasSent}, {rec.Server != nil, hasServer}, {rec.Level != nil, hasLevel}, {rec.Repeat != nil, hasRepeat}, {rec.Text != nil, hasText}, {own, hasOwnID}} {
		if o.set {
			has |= o.flag
		}
	}
	e := encoder{buf: scratch[:0], names: n}
	e.uint(ord)
	e.uint(uint64(has))
	e.uint(rec.Seq)
	e.int(rec.Scheduled.Unix())
	e.uint(uint64(rec.Scheduled.Nanosecond()))
	if rec.Sent != nil {
		e.int(rec.Sent.Unix() - rec.Scheduled.Unix())
		e.uint(uint64(rec.Sent.Nanosecond()))
	}
	for _, v := range []*float64{rec.LagS, rec.TTFTS, rec.TTFAS, rec.TPOTS, rec.E2ELS, rec.ITLMaxS} {
		e.seconds(v)
	}
	if rec.Server != nil {
		e.seconds(rec.Server.QueueS)
		e.seconds(rec.Server.TTFTS)
	}
	if rec.Level != nil {
		e.seconds(rec.Level)
	}
	for _, v := range []int{rec.HTTPStatus, rec.PromptTokens, rec.OutputTokens, rec.Chunks, rec.ReasoningTokens, rec.ToolCalls} {
		e.int(int64(v))
	}
	if rec.Repeat != nil {
		e.int(int64(*rec.Repeat))
	}
	for _, s := range []string{string(rec.Disposition), rec.Reason, rec.FinishReason, rec.Model, rec.Error} {
		e.name(s)
	}
	if own {
		e.buf = binary.LittleEndian.AppendUint32(e.buf, nonce)
	} else {
		e.id(rec.RequestID)
	}
	e.str(rec.Fingerprint)
	if rec.Flags == nil {
		e.uint(0)
	} else {
		e.uint(uint64(len(rec.Flags)) + 1)
		for _, f := range rec.Flags {
			e.name(f)
		}
	}
	if rec.Text != nil {
		e.str(*rec.Text)
	}
	return e.buf
}

// record is e as the ledger.Record it was made from, of the pair named
// target, probeName and replica, whose names table (or a copy of its
// slice taken after e was made) is n.
func (e *entry) record(target, probeName, replica string, n names) ledger.Record {
	d := decoder{b: e.b, names: n}
	d.uint() // ord
	has := fields(d.uint())
	rec := ledger.Record{Seq: d.uint(), Target: target, Probe: probeName, Replica: replica, RunID: ledger.RunID()}
	sec := d.int()
	rec.Scheduled = time.Unix(sec, int64(d.uint())).UTC()
	if has&hasSent != 0 {
		sentSec := sec + d.int()
		sent := time.Unix(sentSec, int64(d.uint())).UTC()
		rec.Sent = &sent
	}
	for _, to := range []**float64{&rec.LagS, &rec.TTFTS, &rec.TTFAS, &rec.TPOTS, &rec.E2ELS, &rec.ITLMaxS} {
		*to = d.seconds()
	}
	if has&hasServer != 0 {
		queue, ttft := d.seconds(), d.seconds()
		rec.Server = &ledger.ServerRecord{QueueS: queue, TTFTS: ttft}
	}
	if has&hasLevel != 0 {
		rec.Level = d.seconds()
	}
	for _, to := range []*int{&rec.HTTPStatus, &rec.PromptTokens, &rec.OutputTokens, &rec.Chunks, &rec.ReasoningTokens, &rec.ToolCalls} {
		*to = int(d.int())
	}
	if has&hasRepeat != 0 {
		repeat := int(d.int())
		rec.Repeat = &repeat
	}
	rec.Disposition = probe.Disposition(d.str())
	rec.Reason, rec.FinishReason, rec.Model, rec.Error = d.str(), d.str(), d.str(), d.str()
	if has&hasOwnID != 0 {
		rec.RequestID = probe.RequestID(target, probeName, rec.Seq, binary.LittleEndian.Uint32(d.b))
		d.b = d.b[4:]
	} else {
		rec.RequestID = d.id()
	}
	rec.Fingerprint = d.str()
	if count := d.uint(); count > 0 {
		rec.Flags = make([]string, count-1)
		for i := range rec.Flags {
			rec.Flags[i] = d.str()
		}
	}
	if has&hasText != 0 {
		text := d.str()
		rec.Text = &text
	}
	return rec
}
