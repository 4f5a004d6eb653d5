package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Tracker keeps the fingerprint state of one pair's prompts: per prompt,
// the baseline and the run of consecutive requests that disagree with it.
// The engine owns one per running pair and drops it when the pair stops.
// It is safe for concurrent use.
type Tracker struct {
	logger  *slog.Logger
	confirm int
	prompts []*promptState
}

// promptState is the state machine of one prompt.
type promptState struct {
	// basis is a digest of what decides the prompt's answer; a reload
	// that changes it starts the prompt afresh.
	basis string

	mu        sync.Mutex
	baseline  string // "" until a value was confirmed
	candidate string // the value the current run of requests agrees on
	streak    int    // consecutive requests with candidate
}

// NewTracker returns the tracker of pair p, or nil when its probe has no
// fingerprint. prev is the tracker of the pair's previous configuration
// (nil for a new pair): a prompt whose answer depends on the same things
// (target, model, request, the prompt itself, the token count) keeps its
// state, shared with prev so that the previous configuration's last
// requests still count; the others start with no baseline.
func NewTracker(p config.Pair, prev *Tracker, logger *slog.Logger) *Tracker {
	f := p.Probe.Fingerprint
	if f == nil {
		return nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &Tracker{
		logger:  logger.With("target", p.Key.Target, "probe", p.Key.Probe),
		confirm: max(f.Confirm, 1),
		prompts: make([]*promptState, len(p.Probe.Workload.Prompts)),
	}
	for i := range t.prompts {
		b := basis(p, i)
		if prev != nil && i < len(prev.prompts) && prev.prompts[i].basis == b {
			t.prompts[i] = prev.prompts[i]
			continue
		}
		t.prompts[i] = &promptState{basis: b}
	}
	return t
}

// basis digests what decides the answer to prompt i of pair p at
// temperature 0. Expectations and the confirmation count do not.
func basis(p config.Pair, i int) string {
	pr := p.Probe.Workload.Prompts[i]
	b, _ := json.Marshal(struct {
		URL, Model, API string
		Request         config.Request
		Prompt          string
		Messages        []config.Message
		Seed            *int64
		Tokens          int
	}{p.Target.URL, p.Target.Model, p.Probe.API, p.Probe.Request, pr.Prompt, pr.Messages, pr.Seed, p.Probe.Fingerprint.Tokens})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Observe applies the fingerprint of a finished request, if it has one,
// to its prompt's state, and sets res.Fingerprint.Changed when it is the
// request that confirmed a change. A nil Tracker observes nothing.
func (t *Tracker) Observe(res *probe.Result) {
	if t == nil || res.Fingerprint == nil {
		return
	}
	fp := res.Fingerprint
	if fp.Prompt < 0 || fp.Prompt >= len(t.prompts) {
		return
	}
	from, confirmed := t.prompts[fp.Prompt].observe(fp.Hash, t.confirm)
	switch {
	case !confirmed:
	case from == "":
		t.logger.Info("output fingerprint baseline", "prompt", fp.Prompt, "fingerprint", fp.Hash)
	default:
		fp.Changed = true
		t.logger.Warn("output fingerprint changed", "prompt", fp.Prompt, "from", from, "to", fp.Hash,
			"confirmed_by", t.confirm, "request_id", res.RequestID)
	}
}

// observe applies one value: a value different from the baseline seen on
// confirm consecutive requests becomes the baseline (confirmed, with the
// one it replaced, "" for the first); the baseline seen again ends any
// run of others, and a different other value starts a new run.
func (s *promptState) observe(h string, confirm int) (from string, confirmed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == s.baseline {
		s.candidate, s.streak = "", 0
		return "", false
	}
	if h == s.candidate {
		s.streak++
	} else {
		s.candidate, s.streak = h, 1
	}
	if s.streak < confirm {
		return "", false
	}
	from = s.baseline
	s.baseline, s.candidate, s.streak = h, "", 0
	return from, true
}
