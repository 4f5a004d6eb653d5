package workload

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/vllm-prober/vllm-prober/config"
)

// Token ids of random completions prompts are drawn from this range, which
// lies inside the vocabulary of every current LLM tokenizer and above the
// special tokens most of them put first.
const (
	randomTokenLow  = 1000
	randomTokenHigh = 30000
)

// calibrationWords is how many words the chat calibration text holds.
const calibrationWords = 256

// randomWords are common short English words: in most tokenizers each is
// one token with its leading space, which keeps the uncalibrated estimate
// (one word, one token) close.
var randomWords = strings.Fields(`the of and to in is was for on are with as his they be at one have this
from or had by word but what some we can out other were all there when up use your how said an each she
which do their time if will way about many then them write would like so these her long make thing see him
two has look more day could go come did number sound no most people my over know water than call first who
may down side been now find any new work part take get place made live where after back little only round
man year came show every good me give our under name very through just form sentence great think say help
low line differ turn cause much mean before move right boy old too same tell does set three want air well
also play small end put home read hand port large spell add even land here must big high such follow act`)

// randomWorkload generates prompts of a drawn token length, as vLLM's
// random dataset does: lengths uniform in [floor(L(1-r)), ceil(L(1+r))].
// Completions prompts are token ids (exact length); chat and embeddings
// prompts are words whose count is calibrated once through the target's
// /tokenize.
type randomWorkload struct {
	api       string
	cfg       config.RandomWorkload
	maxTokens int
	count     TokenCounter

	mu  sync.Mutex
	rng *rand.Rand
	// prefixIDs are the shared prefix of completions prompts.
	prefixIDs []int

	calMu      sync.Mutex
	calibrated bool
	perWord    float64 // tokens per word
}

func newRandomWorkload(p config.Probe, count TokenCounter) *randomWorkload {
	seed := uint64(p.Workload.Random.Seed)
	w := &randomWorkload{
		api:       p.API,
		cfg:       *p.Workload.Random,
		maxTokens: p.Request.MaxTokens,
		count:     count,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		perWord:   1,
	}
	if !w.sendsText() && w.cfg.PrefixTokens > 0 {
		w.prefixIDs = randomIDs(w.prefixRand(), w.cfg.PrefixTokens)
	}
	return w
}

// prefixRand returns the generator of the shared prefix: seeded by the
// workload's seed alone, so every request, worker and run with that seed
// starts with the same prefix, whatever it draws for the rest.
func (w *randomWorkload) prefixRand() *rand.Rand {
	const salt = 0x70726566697831 // "prefix1"
	seed := uint64(w.cfg.Seed)
	return rand.New(rand.NewPCG(seed^salt, salt))
}

// sendsText reports whether the prompts are words, calibrated through the
// tokenizer, rather than token ids: chat and embeddings requests take text.
func (w *randomWorkload) sendsText() bool {
	return w.api == config.APIChat || w.api == config.APIEmbeddings
}

// drawLen draws a length around l with range ratio r, at least 1.
func drawLen(rng *rand.Rand, l int, r float64) int {
	lo := int(math.Floor(float64(l) * (1 - r)))
	hi := int(math.Ceil(float64(l) * (1 + r)))
	lo = max(lo, 1)
	hi = max(hi, lo)
	return lo + rng.IntN(hi-lo+1)
}

func (w *randomWorkload) Next(ctx context.Context, model string) Item {
	var perWord float64
	if w.sendsText() {
		perWord = w.calibrate(ctx, model)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.draw(w.rng, perWord)
}

// ItemAt draws request seq's item from a generator of its own, seeded by
// the workload's seed and seq: the same item whichever requests come
// first or are asked at all.
func (w *randomWorkload) ItemAt(ctx context.Context, model string, seq uint64) Item {
	var perWord float64
	if w.sendsText() {
		perWord = w.calibrate(ctx, model)
	}
	seed := uint64(w.cfg.Seed)
	return w.draw(rand.New(rand.NewPCG(seed^(seq*0x9e3779b97f4a7c15), seq)), perWord)
}

// draw draws one item from rng (chat prompts with perWord tokens per
// word); the caller owns rng.
func (w *randomWorkload) draw(rng *rand.Rand, perWord float64) Item {
	outLen := w.cfg.OutputTokens
	if outLen <= 0 {
		outLen = w.maxTokens
	}
	in := drawLen(rng, w.cfg.InputTokens, w.cfg.RangeRatio)
	if w.sendsText() {
		words := max(1, int(math.Round(float64(in)/perWord)))
		text := randomText(rng, words)
		if n := w.cfg.PrefixTokens; n > 0 {
			// Drawn again for every request: the same words as long as
			// the calibration holds, and nothing shared to guard.
			text = randomText(w.prefixRand(), max(1, int(math.Round(float64(n)/perWord)))) + " " + text
		}
		if w.api == config.APIEmbeddings {
			return Item{Prompt: text} // embeddings generate nothing: no limit to draw
		}
		return Item{
			Messages:  []config.Message{{Role: "user", Content: text}},
			MaxTokens: drawLen(rng, outLen, w.cfg.RangeRatio),
		}
	}
	// As vLLM's random dataset: the prefix, then input_tokens drawn ones.
	ids := randomIDs(rng, in)
	if len(w.prefixIDs) > 0 {
		ids = append(slices.Clip(w.prefixIDs), ids...)
	}
	return Item{
		Prompt:       ids,
		PromptTokens: len(ids),
		MaxTokens:    drawLen(rng, outLen, w.cfg.RangeRatio),
	}
}

// randomIDs draws n token ids from rng.
func randomIDs(rng *rand.Rand, n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = randomTokenLow + rng.IntN(randomTokenHigh-randomTokenLow)
	}
	return ids
}

// randomText returns n random words drawn from rng.
func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(randomWords[rng.IntN(len(randomWords))])
	}
	return b.String()
}

// calibrate measures tokens per word once through the target's tokenizer.
// When the target has none (or it fails) one word counts as one token; the
// real prompt length is always taken from usage.
func (w *randomWorkload) calibrate(ctx context.Context, model string) float64 {
	w.calMu.Lock()
	defer w.calMu.Unlock()
	if w.calibrated || w.count == nil {
		return w.perWord
	}
	w.calibrated = true
	// A separate fixed generator keeps the request sequence independent
	// of whether calibration ran.
	rng := rand.New(rand.NewPCG(1, 2))
	words := make([]string, calibrationWords)
	for i := range words {
		words[i] = randomWords[rng.IntN(len(randomWords))]
	}
	n, err := w.count(ctx, model, strings.Join(words, " "))
	switch {
	case err == nil && n > 0:
		w.perWord = float64(n) / calibrationWords
	case err != nil && ctx.Err() != nil:
		// The request ended, not the tokenizer: try again next time.
		w.calibrated = false
	}
	return w.perWord
}
