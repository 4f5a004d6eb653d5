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

// pairHistory is a pair's kept records: the last limit in recent, and
// those of the last failLimit failures that left it in failed; the
// failures still in recent are marked there, not copied.
type pairHistory struct {
	recent, failed arena
	recentFailures int   // entries of recent that failed
	names          names // the strings its entries repeat
}

// add keeps e, an encoded record, failed if it was not accepted.
func (p *pairHistory) add(e []byte, failed bool, failLimit int) {
	if p.recent.n == p.recent.size {
		if old, oldFailed := p.recent.pop(); oldFailed {
			p.recentFailures--
			// Among the last failLimit failures, it is kept in failed.
			if p.failed.n+p.recentFailures < failLimit {
				p.failed.push(old.b, true)
			}
		}
	}
	p.recent.push(e, failed)
	if failed {
		p.recentFailures++
		for p.failed.n > 0 && p.failed.n+p.recentFailures > failLimit {
			p.failed.pop()
		}
	}
}

// each calls f with the pair's kept records, oldest first: all of recent,
// or, with failures, the last failLimit failures.
func (p *pairHistory) each(failures bool, failLimit int, f func(entry)) {
	if !failures {
		for i := range p.recent.n {
			e, _ := p.recent.at(i)
			f(e)
		}
		return
	}
	skip := p.failed.n + p.recentFailures - failLimit
	for _, a := range []*arena{&p.failed, &p.recent} {
		for i := range a.n {
			if e, failed := a.at(i); failed {
				if skip > 0 {
					skip--
					continue
				}
				f(e)
			}
		}
	}
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
		p = &pairHistory{recent: newArena(h.limit), failed: newArena(h.failLimit)}
		h.pairs[key] = p
	}
	h.ord++
	h.scratch = encodeEntry(h.ord, &rec, &p.names, h.scratch)
	p.add(h.scratch, r.Disposition != probe.Accepted, h.failLimit)
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
	return h.collect(m, limit, false)
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
	return h.collect(m, n, true)
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

// collect returns up to limit records of the pairs m matches, newest
// first: their kept failures or all their kept records. It decodes them
// after the lock, from bytes an arena never writes again.
func (h *History) collect(m Match, limit int, failures bool) []ledger.Record {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	var entries []keyed
	for key, p := range h.pairs {
		if m.matches(key) {
			p.each(failures, h.failLimit, func(e entry) {
				entries = append(entries, keyed{key, p.names, e.ord(), e})
			})
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
