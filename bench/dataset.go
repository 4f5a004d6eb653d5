package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/vllm-prober/vllm-prober/config"
)

// Prompt is one benchmark request's input.
type Prompt struct {
	// TokenIDs is the prompt of a random completions request, sent as
	// token ids so its length is exact on any tokenizer.
	TokenIDs []int
	// Text is the prompt text (completions) or the user message (chat)
	// when TokenIDs is nil.
	Text string
	// Messages, when set, is sent as is by chat requests.
	Messages []config.Message
	// PromptLen is the dataset's own estimate of the prompt's tokens; the
	// server's usage replaces it.
	PromptLen int
	// OutputLen is max_tokens (completions) or max_completion_tokens (chat).
	OutputLen int
}

// Token ids of random prompts come from this range, inside every current
// tokenizer's vocabulary and above the special tokens most put first.
const (
	randomTokenLow  = 1000
	randomTokenHigh = 30000
)

// randomWords are short common words, one token each (with their leading
// space) in most tokenizers, used for random chat prompts.
var randomWords = strings.Fields(`time year people way day man thing woman life child world school state
family student group country problem hand part place case week company system program question work
government number night point home water room mother area money story fact month lot right study book
eye job word business issue side kind head house service friend father power hour game line end member`)

// lenRange returns vLLM's random dataset length bounds for l and ratio r:
// [floor(l(1-r)), ceil(l(1+r))], the low bound at least 1.
func lenRange(l int, r float64) (lo, hi int) {
	lo = max(1, int(math.Floor(float64(l)*(1-r))))
	hi = max(lo, int(math.Ceil(float64(l)*(1+r))))
	return lo, hi
}

// RandomPrompts builds n prompts the way vLLM's random dataset does:
// lengths drawn uniformly from lenRange, and for request i the token ids
// low+(offset_i+i+j) mod span with a random offset_i. Chat prompts are
// words instead (one token each in most tokenizers); the server's usage
// gives the exact count.
func RandomPrompts(n, inputLen, outputLen int, ratio float64, seed int64, chat bool) []Prompt {
	s := uint64(seed)
	rng := rand.New(rand.NewPCG(s, s^0x5bd1e9955bd1e995))
	inLo, inHi := lenRange(inputLen, ratio)
	outLo, outHi := lenRange(outputLen, ratio)
	out := make([]Prompt, n)
	const span = randomTokenHigh - randomTokenLow
	for i := range out {
		in := inLo + rng.IntN(inHi-inLo+1)
		p := Prompt{PromptLen: in, OutputLen: outLo + rng.IntN(outHi-outLo+1)}
		offset := rng.IntN(span)
		if chat {
			words := make([]string, in)
			for j := range words {
				words[j] = randomWords[(offset+i+j)%len(randomWords)]
			}
			p.Text = strings.Join(words, " ")
		} else {
			p.TokenIDs = make([]int, in)
			for j := range p.TokenIDs {
				p.TokenIDs[j] = randomTokenLow + (offset+i+j)%span
			}
		}
		out[i] = p
	}
	return out
}

// datasetRecord is one entry of a dataset file: {"prompt": ...},
// {"messages": [...]} or a ShareGPT record {"conversations": [...]}.
type datasetRecord struct {
	Prompt        *string          `json:"prompt"`
	Messages      []config.Message `json:"messages"`
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// maxDatasetLine bounds one JSONL line.
const maxDatasetLine = 16 << 20

// LoadDataset reads n prompts from a dataset file: a ShareGPT JSON array,
// or JSON Lines of {"prompt"}, {"messages"} or ShareGPT records. ShareGPT
// records use their first turn as the prompt and the word count of the
// second as the output length; other records get outputLen. Entries are
// shuffled with seed (as vLLM samples them) and reused when the file holds
// fewer than n. Errors name the file and line.
func LoadDataset(path string, n, outputLen int, seed int64) ([]Prompt, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	var recs []datasetRecord
	var lines []int
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &recs); err != nil {
			return nil, fmt.Errorf("%s: invalid ShareGPT JSON: %w", path, err)
		}
		for i := range recs {
			lines = append(lines, i+1)
		}
	} else if recs, lines, err = readJSONL(path, data); err != nil {
		return nil, err
	}
	var prompts []Prompt
	for i, r := range recs {
		p, ok, err := r.prompt(outputLen)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, lines[i], err)
		}
		if ok {
			prompts = append(prompts, p)
		}
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("%s: no usable prompts in dataset", path)
	}
	s := uint64(seed)
	rand.New(rand.NewPCG(s, s)).Shuffle(len(prompts), func(i, j int) { prompts[i], prompts[j] = prompts[j], prompts[i] })
	out := make([]Prompt, n)
	for i := range out {
		out[i] = prompts[i%len(prompts)]
	}
	return out, nil
}

// readJSONL decodes one record per non-empty line.
func readJSONL(path string, data []byte) ([]datasetRecord, []int, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxDatasetLine)
	var recs []datasetRecord
	var lines []int
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r datasetRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: invalid JSON: %w", path, n, err)
		}
		recs = append(recs, r)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, lines, nil
}

// prompt converts a record; ok is false for ShareGPT records too short to
// use (vLLM skips them too).
func (r *datasetRecord) prompt(outputLen int) (Prompt, bool, error) {
	switch {
	case r.Prompt != nil:
		if *r.Prompt == "" {
			return Prompt{}, false, errors.New(`empty "prompt"`)
		}
		return Prompt{Text: *r.Prompt, PromptLen: len(strings.Fields(*r.Prompt)), OutputLen: outputLen}, true, nil
	case len(r.Messages) > 0:
		n := 0
		for _, m := range r.Messages {
			n += len(strings.Fields(m.Content))
		}
		return Prompt{Messages: r.Messages, PromptLen: n, OutputLen: outputLen}, true, nil
	case len(r.Conversations) > 0:
		if len(r.Conversations) < 2 {
			return Prompt{}, false, nil
		}
		in, reply := r.Conversations[0].Value, r.Conversations[1].Value
		p := Prompt{Text: in, PromptLen: len(strings.Fields(in)), OutputLen: len(strings.Fields(reply))}
		return p, p.PromptLen > 0 && p.OutputLen > 0, nil
	}
	return Prompt{}, false, errors.New(`want "prompt", "messages" or "conversations"`)
}
