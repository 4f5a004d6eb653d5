package engine

import (
	"hash/fnv"
	"time"
)

// plan drops aborted sequences, preempts when the KV cache would overflow,
// admits waiting sequences and returns the step to run.
func (e *Engine) plan() step {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running = e.dropAborted(e.running, true)
	e.waiting = e.dropAborted(e.waiting, false)

	// Every decoding sequence grows by one token this step.
	for len(e.running) > 1 && e.kvUsed+len(e.running) > e.c.KVCacheTokens {
		e.preemptLast()
	}
	var st step
	for _, s := range e.running {
		st.seqs = append(st.seqs, s)
		st.decodes++
	}
	for len(e.waiting) > 0 && len(e.running) < e.c.MaxNumSeqs {
		s := e.waiting[0]
		need := s.kvTokens() + 1
		if e.kvUsed+len(e.running)+need > e.c.KVCacheTokens && len(e.running) > 0 {
			break
		}
		e.waiting = e.waiting[1:]
		e.running = append(e.running, s)
		e.kvUsed += s.kvTokens()
		st.prefillTokens += e.prefillCost(s)
		st.seqs = append(st.seqs, s)
	}
	e.setGauges()
	return st
}

// prefillCost is the number of tokens a sequence computes when admitted.
func (e *Engine) prefillCost(s *Seq) int {
	if s.generated > 0 {
		return s.kvTokens() // recompute after preemption, no cache credit
	}
	hits := e.prefix.lookup(s.PromptIDs)
	e.met.prefixQueries.Add(float64(len(s.PromptIDs)))
	e.met.prefixHits.Add(float64(hits))
	e.met.promptCached.Add(float64(hits))
	return len(s.PromptIDs) - hits
}

func (e *Engine) dropAborted(ss []*Seq, running bool) []*Seq {
	kept := ss[:0]
	for _, s := range ss {
		if !s.aborted.Load() {
			kept = append(kept, s)
			continue
		}
		if running {
			e.kvUsed -= s.kvTokens()
		}
	}
	clear(ss[len(kept):])
	return kept
}

// preemptLast moves the most recently admitted sequence back to the front
// of the queue; it recomputes its KV when readmitted (vLLM's recompute
// preemption).
func (e *Engine) preemptLast() {
	s := e.running[len(e.running)-1]
	e.running = e.running[:len(e.running)-1]
	e.kvUsed -= s.kvTokens()
	s.prefilled = false
	e.waiting = append([]*Seq{s}, e.waiting...)
	e.met.preemptions.Inc()
}

func (e *Engine) setGauges() {
	e.met.running.Set(float64(len(e.running)))
	e.met.waiting.Set(float64(len(e.waiting)))
	e.met.waitingReason.WithLabelValues("capacity").Set(float64(len(e.waiting)))
	e.met.kvUsage.Set(float64(e.kvUsed) / float64(e.c.KVCacheTokens))
}

// complete gives every live sequence of the step its token, retires
// finished sequences and then streams the outputs, so the server's metrics
// are updated before a client can see the last token.
func (e *Engine) complete(st step, now time.Time) {
	e.met.iterationTokens.Observe(float64(st.prefillTokens + st.decodes))
	e.mu.Lock()
	defer e.mu.Unlock()
	var outs []Output
	var sinks []*Sink
	for _, s := range st.seqs {
		if s.aborted.Load() {
			continue
		}
		if !s.prefilled {
			s.prefilled = true
			if s.generated == 0 {
				e.met.promptTokens.Add(float64(len(s.PromptIDs)))
			}
		}
		if s.Pooling {
			outs, sinks = append(outs, e.finishPooling(s, now)), append(sinks, s.Sink)
			continue
		}
		e.kvUsed++
		if o, ok := e.emitToken(s, now); ok {
			outs, sinks = append(outs, o), append(sinks, s.Sink)
		}
		if s.generated == s.Target {
			e.retire(s)
		}
	}
	e.setGauges()
	for i, o := range outs {
		sinks[i].push(o)
	}
}

// emitToken appends one token to s and returns an output when the stream
// interval, the first token or the finish says so.
func (e *Engine) emitToken(s *Seq, now time.Time) (Output, bool) {
	i := s.generated
	s.generated++
	e.met.generationTokens.Inc()
	if s.timing.FirstToken.IsZero() {
		s.timing.FirstToken = now
		e.met.ttft.Observe(now.Sub(s.timing.Arrival).Seconds())
	} else {
		e.met.itl.Observe(now.Sub(s.timing.LastToken).Seconds())
	}
	s.timing.LastToken = now
	last := s.generated == s.Target
	switch {
	case last && s.FinishReason == "stop": // EOS has no text
	case i < s.Reasoning:
		s.pendingReasn = append(s.pendingReasn, s.Text(i)...)
	default:
		s.pendingText = append(s.pendingText, s.Text(i)...)
	}
	s.pendingCount++
	if s.generated > 1 && s.pendingCount < e.c.StreamInterval && !last {
		return Output{}, false
	}
	o := Output{Choice: s.Choice, Text: string(s.pendingText), Reasoning: string(s.pendingReasn), Tokens: s.pendingCount, Total: s.generated, At: now}
	if last {
		o.Finish = s.FinishReason
		o.Timing = s.timing
	}
	s.pendingText, s.pendingReasn, s.pendingCount = nil, nil, 0
	return o, true
}

// finishPooling ends a pooling sequence in the step that prefilled it:
// its one output carries no token. It records the request metrics that
// apply to a request without generated tokens (no TTFT, ITL, TPOT or
// generation length).
func (e *Engine) finishPooling(s *Seq, now time.Time) Output {
	s.timing.FirstToken, s.timing.LastToken = now, now
	e.unrun(s)
	t := s.timing
	m := e.met
	m.success.WithLabelValues("stop").Inc()
	m.e2e.Observe(now.Sub(t.Arrival).Seconds())
	m.queueTime.Observe(t.Scheduled.Sub(t.Queued).Seconds())
	m.prefillTime.Observe(now.Sub(t.Scheduled).Seconds())
	m.inferenceTime.Observe(now.Sub(t.Scheduled).Seconds())
	m.promptLen.Observe(float64(len(s.PromptIDs)))
	return Output{Choice: s.Choice, Finish: "stop", At: now, Timing: t}
}

// unrun removes a finished sequence from the running batch and the KV
// cache, and keeps its prompt in the prefix cache.
func (e *Engine) unrun(s *Seq) {
	for i, r := range e.running {
		if r == s {
			e.running = append(e.running[:i], e.running[i+1:]...)
			break
		}
	}
	e.kvUsed -= s.kvTokens()
	e.prefix.insert(s.PromptIDs)
}

// retire removes a finished sequence and records its request metrics.
func (e *Engine) retire(s *Seq) {
	e.unrun(s)
	t := s.timing
	m := e.met
	m.success.WithLabelValues(s.FinishReason).Inc()
	m.e2e.Observe(t.LastToken.Sub(t.Arrival).Seconds())
	m.queueTime.Observe(t.Scheduled.Sub(t.Queued).Seconds())
	m.prefillTime.Observe(t.FirstToken.Sub(t.Scheduled).Seconds())
	decode := t.LastToken.Sub(t.FirstToken).Seconds()
	m.decodeTime.Observe(decode)
	m.inferenceTime.Observe(t.LastToken.Sub(t.Scheduled).Seconds())
	tpot := 0.0
	if s.generated > 1 {
		tpot = decode / float64(s.generated-1)
	}
	m.tpot.Observe(tpot)
	m.promptLen.Observe(float64(len(s.PromptIDs)))
	m.genLen.Observe(float64(s.generated))
	m.maxGenLen.Observe(float64(s.generated))
	m.paramsMaxTokens.Observe(float64(s.MaxTokens))
	m.paramsN.Observe(1)
}

// prefixBlock is the block size of the prefix cache, as vLLM's default.
const prefixBlock = 16

// prefixCacheCap bounds the number of cached block hashes.
const prefixCacheCap = 1 << 16

// prefixCache remembers hashes of full prompt blocks (each hash covers the
// whole prefix up to that block). Engine goroutine only.
type prefixCache struct {
	on     bool
	blocks map[uint64]struct{}
}

func newPrefixCache(on bool) *prefixCache {
	return &prefixCache{on: on, blocks: map[uint64]struct{}{}}
}

func blockHashes(ids []int) []uint64 {
	h := fnv.New64a()
	var out []uint64
	var buf [8]byte
	for i, id := range ids {
		for b := range 8 {
			buf[b] = byte(uint64(id) >> (8 * b))
		}
		h.Write(buf[:])
		if (i+1)%prefixBlock == 0 {
			out = append(out, h.Sum64())
		}
	}
	return out
}

// lookup returns the cached prompt tokens; the last token is always
// recomputed, as in vLLM.
func (c *prefixCache) lookup(ids []int) int {
	if !c.on {
		return 0
	}
	hits := 0
	for _, h := range blockHashes(ids) {
		if _, ok := c.blocks[h]; !ok {
			break
		}
		hits += prefixBlock
	}
	return min(hits, len(ids)-1)
}

func (c *prefixCache) insert(ids []int) {
	if !c.on {
		return
	}
	hs := blockHashes(ids)
	if len(c.blocks)+len(hs) > prefixCacheCap {
		clear(c.blocks)
	}
	for _, h := range hs {
		c.blocks[h] = struct{}{}
	}
}
