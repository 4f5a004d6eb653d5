package textgen

import (
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

// answerText returns the deterministic answer to the last arithmetic
// question in prompt, or "" when there is none. wrong gives a wrong one.
func answerText(prompt string, wrong bool) string {
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
	return strconv.FormatInt(v, 10) + "."
}

// Generation is the deterministic output of one sequence: the answer (if
// the prompt asks one) followed by filler words, ending with EOS after
// natural tokens unless ignore_eos or max_tokens says otherwise.
type Generation struct {
	answer  []string
	rng     *rand.Rand
	natural int // tokens including the EOS token
}

// NewGeneration returns the output of a sequence that answers prompt,
// wrongly when wrong is set; seed and prompt decide the filler words.
func NewGeneration(seed int64, prompt string, wrong bool) *Generation {
	h := fnv.New64a()
	h.Write([]byte(prompt))
	if wrong {
		h.Write([]byte{0xba, 0xd})
	}
	sum := h.Sum64()
	g := &Generation{rng: rand.New(rand.NewPCG(uint64(seed), sum))}
	if a := answerText(prompt, wrong); a != "" {
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
	w := fillerWords[g.rng.IntN(len(fillerWords))]
	if i == 0 {
		return w
	}
	return " " + w
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
