// Package history keeps the recent records of every pair in memory, for the
// status page and the results API; it is a Sink of the schedule engine.
package history

import (
	"cmp"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

var _ probe.Sink = (*History)(nil)

const (
	// maxKeptFailures bounds the failures kept per pair beyond the ring.
	maxKeptFailures = 50
	// historyTextBytes bounds the generated text kept per failure.
	historyTextBytes = 1024
)

// History keeps the most recent records of every (target, probe) pair in
// memory for the status page and the results API: a ring of the last
// limit records per pair, plus the last failures (up to min(limit, 50))
// kept even after they leave the ring. Text is kept only for failures and
// cut to 1 KiB. As a Sink it keeps the pairs the Engine runs: a pair's
// records go when a reload removes it, and the results its requests still
// in flight deliver afterwards are not kept. It is safe for concurrent
// use; a nil *History ignores Add.
type History struct {
	mu        sync.Mutex
	limit     int
	failLimit int
	ord       uint64 // insertion order across pairs, for newest-first merges
	pairs     map[config.PairKey]*pairHistory
	live      map[config.PairKey]bool // started and not stopped (Sink)
	scratch   []byte                  // an entry being encoded
}

type pairHistory struct {
	recent, failures ring
	names            names // the strings its entries repeat
}

// ring is a fixed-capacity buffer that overwrites its oldest entry.
type ring struct {
	buf  []entry
	size int
	next int
}

func (r *ring) add(e entry) {
	if len(r.buf) < r.size {
		if len(r.buf) == cap(r.buf) {
			// Doubling up to size exactly: append would round a full
			// ring of 200 up to 256 entries.
			r.buf = append(make([]entry, 0, min(r.size, max(8, 2*cap(r.buf)))), r.buf...)
		}
		r.buf = append(r.buf, e)
		return
	}
	r.buf[r.next] = e
	r.next = (r.next + 1) % r.size
}

// New returns a History keeping limit records per pair; a limit
// that is not positive means config's global.history_limit default.
func New(limit int) *History {
	if limit <= 0 {
		limit = config.DefaultGlobal.HistoryLimit
	}
	return &History{
		limit:     limit,
		failLimit: min(limit, maxKeptFailures),
		pairs:     map[config.PairKey]*pairHistory{},
		live:      map[config.PairKey]bool{},
	}
}

// Add records a finished request, whether its pair runs or not.
func (h *History) Add(r *probe.Result) { h.add(r, false) }

// add records r; when liveOnly, only if its pair runs.
func (h *History) add(r *probe.Result, liveOnly bool) {
	if h == nil {
		return
	}
	rec := ledger.NewRecord(r, config.RecordTextFailures)
	if rec.Text != nil && len(*rec.Text) > historyTextBytes {
		cut := truncateUTF8(*rec.Text, historyTextBytes)
		rec.Text = &cut
	}
	key := r.Key()
	h.mu.Lock()
	defer h.mu.Unlock()
	if liveOnly && !h.live[key] {
		return
	}
	p := h.pairs[key]
	if p == nil {
		p = &pairHistory{recent: ring{size: h.limit}, failures: ring{size: h.failLimit}}
		h.pairs[key] = p
	}
	h.ord++
	var e entry
	e, h.scratch = newEntry(h.ord, &rec, &p.names, h.scratch)
	p.recent.add(e)
	if r.Disposition != probe.Accepted {
		p.failures.add(e)
	}
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// AnyReplica is the Match.Replica of every pair of a target and probe: its
// gateway's or static pair and each replica's.
const AnyReplica = "*"

// Match selects pairs: Target and Probe "" match any; Replica "" matches
// only a static target's or gateway's pair, AnyReplica any pair, and a
// host:port that replica's pair.
type Match struct {
	Target, Probe, Replica string
}

func (m Match) matches(k config.PairKey) bool {
	return (m.Target == "" || k.Target == m.Target) && (m.Probe == "" || k.Probe == m.Probe) &&
		(m.Replica == AnyReplica || k.Replica == m.Replica)
}

// Recent returns up to limit records, newest first, of the pairs matching
// target and probe ("" matches any), replicas included; limit <= 0 returns
// all kept.
func (h *History) Recent(target, probeName string, limit int) []ledger.Record {
	return h.RecentOf(Match{target, probeName, AnyReplica}, limit)
}

// RecentOf returns up to limit records, newest first, of the pairs m
// matches; limit <= 0 returns all kept.
func (h *History) RecentOf(m Match, limit int) []ledger.Record {
	return h.collect(m, limit, func(p *pairHistory) *ring { return &p.recent })
}

// LastFailures returns up to n records that were not accepted, newest
// first, of the pairs matching target and probe ("" matches any), replicas
// included; n <= 0 returns all kept.
func (h *History) LastFailures(target, probeName string, n int) []ledger.Record {
	return h.LastFailuresOf(Match{target, probeName, AnyReplica}, n)
}

// LastFailuresOf returns up to n records that were not accepted, newest
// first, of the pairs m matches; n <= 0 returns all kept.
func (h *History) LastFailuresOf(m Match, n int) []ledger.Record {
	return h.collect(m, n, func(p *pairHistory) *ring { return &p.failures })
}

// PairStarted implements Sink.
func (h *History) PairStarted(p config.Pair) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.live[p.Key] = true
}

// PairStopped implements Sink by dropping the records of the pair.
func (h *History) PairStopped(key config.PairKey) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.live, key)
	delete(h.pairs, key)
}

// Offered implements Sink: a request is kept once it has finished.
func (h *History) Offered(config.PairKey) {}

// Finished implements Sink by adding r if its pair runs.
func (h *History) Finished(r *probe.Result) { h.add(r, true) }

func (h *History) collect(m Match, limit int, which func(*pairHistory) *ring) []ledger.Record {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	var entries []keyed
	for key, p := range h.pairs {
		if m.matches(key) {
			for _, e := range which(p).buf {
				entries = append(entries, keyed{key, p.names, e.ord(), e})
			}
		}
	}
	h.mu.Unlock()
	slices.SortFunc(entries, func(a, b keyed) int { return cmp.Compare(b.ord, a.ord) })
	if limit > 0 && len(entries) > limit {
		entries = entries[:limit]
	}
	out := make([]ledger.Record, len(entries))
	for i, e := range entries {
		out[i] = e.record(e.key.Target, e.key.Probe, e.key.Replica, e.names)
	}
	return out
}

// keyed is an entry with its pair's key and names, for merging pairs.
type keyed struct {
	key   config.PairKey
	names names
	ord   uint64
	entry
}
