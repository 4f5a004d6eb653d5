// Package textgen is the simulator's text: a deterministic stand-in for a
// BPE tokenizer and the generated output of a sequence, which answers
// arithmetic questions (right, or wrong on demand) and otherwise produces
// filler words.
package textgen

import (
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Vocabulary bounds of the tokenizer stand-in.
const (
	vocabDynamicCap = 1 << 17 // token strings that get their own id
	vocabHashedBase = 1 << 20 // ids of token strings past the cap start here
	// VocabSize bounds token ids: ids are valid below it.
	VocabSize = 1 << 21
)

// Tokenizer is a deterministic stand-in for a BPE tokenizer: a token is a
// run of letters and digits or a single other symbol, each carrying at most
// one leading space; other whitespace runs are tokens of their own. Joining
// the pieces gives the text back exactly, so counts, /tokenize and
// /detokenize agree.
type Tokenizer struct {
	mu   sync.Mutex
	ids  map[string]int
	strs []string
}

// NewTokenizer returns a Tokenizer whose vocabulary starts with the words
// and symbols of generated text.
func NewTokenizer() *Tokenizer {
	t := &Tokenizer{ids: map[string]int{}}
	for _, w := range fillerWords {
		t.id(w)
		t.id(" " + w)
	}
	for _, r := range ".,:;!?'\"()-+*/=0123456789\n" {
		t.id(string(r))
	}
	return t
}

// Split cuts text into token pieces.
func Split(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		start := i
		r, n := utf8.DecodeRuneInString(text[i:])
		if unicode.IsSpace(r) {
			j := i + n
			for j < len(text) {
				r2, n2 := utf8.DecodeRuneInString(text[j:])
				if !unicode.IsSpace(r2) {
					break
				}
				j += n2
			}
			// A single trailing space before a word belongs to the word.
			if j < len(text) && text[j-1] == ' ' {
				if j-1 == i {
					i = piece(text, j, &out, start)
					continue
				}
				j--
			}
			out = append(out, text[i:j])
			i = j
			continue
		}
		i = piece(text, i, &out, start)
	}
	return out
}

// piece appends the word or symbol starting at i, prefixed by text[start:i].
func piece(text string, i int, out *[]string, start int) int {
	r, n := utf8.DecodeRuneInString(text[i:])
	j := i + n
	if isWordRune(r) {
		for j < len(text) {
			r2, n2 := utf8.DecodeRuneInString(text[j:])
			if !isWordRune(r2) {
				break
			}
			j += n2
		}
	}
	*out = append(*out, text[start:j])
	return j
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// Encode returns the token ids of text.
func (t *Tokenizer) Encode(text string) []int {
	pieces := Split(text)
	ids := make([]int, len(pieces))
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, p := range pieces {
		ids[i] = t.idLocked(p)
	}
	return ids
}

func (t *Tokenizer) id(s string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.idLocked(s)
}

func (t *Tokenizer) idLocked(s string) int {
	if id, ok := t.ids[s]; ok {
		return id
	}
	if len(t.strs) >= vocabDynamicCap {
		h := fnv.New32a()
		h.Write([]byte(s))
		return vocabHashedBase + int(h.Sum32()%(VocabSize-vocabHashedBase))
	}
	id := len(t.strs)
	t.ids[s] = id
	t.strs = append(t.strs, s)
	return id
}

// Decode joins the pieces of ids. Ids never handed out decode to a
// deterministic placeholder word.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var b strings.Builder
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		switch {
		case id < 0 || id >= VocabSize:
			return "", fmt.Errorf("token id %d is out of vocabulary (size %d)", id, VocabSize)
		case id < len(t.strs):
			b.WriteString(t.strs[id])
		default:
			fmt.Fprintf(&b, " t%d", id)
		}
	}
	return b.String(), nil
}
