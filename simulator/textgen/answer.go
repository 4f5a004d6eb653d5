package textgen

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"strconv"
)

// fillerWords is the vocabulary of generated text that is not an answer.
var fillerWords = []string{
	"the", "model", "answers", "with", "a", "short", "and", "plain", "text", "that",
	"is", "generated", "by", "simulator", "for", "probing", "latency", "of", "each", "token",
	"stream", "server", "request", "batch", "queue", "prefill", "decode", "cache", "block", "step",
	"value", "result", "number", "simple", "clear", "true", "false", "data", "time", "rate",
}

// arithmetic finds "A op B" questions such as "What is 12*12?".
var arithmetic = regexp.MustCompile(`(-?\d{1,9})\s*([-+*/x×])\s*(-?\d{1,9})`)

// answerLeads are the words an answer opens with under a non-zero output
// variant: the number stays, the wording changes.
var answerLeads = []string{"Answer:", "Result:", "It is", "That is", "Equals", "Total:", "So", "Value:"}

// answerText returns the deterministic answer to the last arithmetic
// question in prompt, or "" when there is none. wrong gives a wrong one;
// a non-zero variant words it differently.
func answerText(prompt string, wrong bool, variant int) string {
	m := arithmetic.FindAllStringSubmatch(prompt, -1)
	if len(m) == 0 {
		return ""
	}
	last := m[len(m)-1]
	a, _ := strconv.ParseInt(last[1], 10, 64)
	b, _ := strconv.ParseInt(last[3], 10, 64)
	var v int64
	switch last[2] {
	case "+":
		v = a + b
	case "-":
		v = a - b
	case "/":
		if b == 0 {
			return "undefined."
		}
		v = a / b
	default:
		v = a * b
	}
	if wrong {
		v = v*2 + 7
	}
	if variant != 0 {
		return answerLeads[(variant-1)%len(answerLeads)] + " " + strconv.FormatInt(v, 10) + "."
	}
	return strconv.FormatInt(v, 10) + "."
}

// Generation is the deterministic output of one sequence: the answer (if
// the prompt asks one) followed by filler words, ending with EOS after
// natural tokens unless ignore_eos or max_tokens says otherwise.
type Generation struct {
	answer  []string
	rng     *rand.Rand
	natural int    // tokens including the EOS token
	pad     string // the text of tokens past a fixed text; "" for filler words
}

// NewFixedGeneration returns the output of a sequence whose text is text
// (a tool call's arguments): its tokens, then EOS; tokens past them (when
// ignore_eos or min_tokens asks for more) are pad.
func NewFixedGeneration(text, pad string) *Generation {
	pieces := Split(text)
	return &Generation{answer: pieces, natural: len(pieces) + 1, pad: pad}
}

// NewGeneration returns the output of a sequence that answers prompt,
// wrongly when wrong is set; seed, prompt and the output variant decide
// the filler words. Variant 0 is the simulator's original text; any other
// variant changes the text of every prompt (output drift).
func NewGeneration(seed int64, prompt string, wrong bool, variant int) *Generation {
	sum := promptHash(prompt, wrong, variant)
	g := &Generation{rng: rand.New(rand.NewPCG(uint64(seed), sum))}
	if a := answerText(prompt, wrong, variant); a != "" {
		g.answer = Split(a)
		g.natural = len(g.answer) + 1
	} else {
		g.natural = 16 + int(sum%48)
	}
	return g
}

// Token returns the text of output token i (tokens are asked in order).
func (g *Generation) Token(i int) string {
	if i < len(g.answer) {
		return g.answer[i]
	}
	if g.pad != "" {
		return g.pad
	}
	w := fillerWords[g.rng.IntN(len(fillerWords))]
	if i == 0 {
		return w
	}
	return " " + w
}

// promptHash seeds the text of a prompt's output.
func promptHash(prompt string, wrong bool, variant int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(prompt))
	if wrong {
		h.Write([]byte{0xba, 0xd})
	}
	if variant != 0 {
		fmt.Fprintf(h, "\x00variant %d", variant)
	}
	return h.Sum64()
}

// Reasoning is the deterministic reasoning text a sequence streams before
// its answer.
type Reasoning struct {
	rng *rand.Rand
}

// NewReasoning returns the reasoning text of prompt under seed and the
// output variant; it does not change the answer that follows it.
func NewReasoning(seed int64, prompt string, variant int) *Reasoning {
	return &Reasoning{rng: rand.New(rand.NewPCG(uint64(seed), promptHash(prompt, false, variant)^0x7ea5))}
}

// Token returns the text of reasoning token i (tokens are asked in order).
func (r *Reasoning) Token(i int) string {
	w := reasoningWords[r.rng.IntN(len(reasoningWords))]
	if i == 0 {
		return w
	}
	return " " + w
}

// reasoningWords is the vocabulary of reasoning text.
var reasoningWords = []string{
	"let", "me", "think", "about", "the", "question", "first", "then", "check", "answer",
	"so", "we", "need", "to", "compute", "it", "step", "by", "consider", "carefully",
}

// Plan returns how many tokens to generate and the finish reason.
func (g *Generation) Plan(maxTokens, minTokens int, ignoreEOS bool) (int, string) {
	if ignoreEOS {
		return maxTokens, "length"
	}
	n := max(g.natural, minTokens+1)
	if n > maxTokens {
		return maxTokens, "length"
	}
	return n, "stop"
}
