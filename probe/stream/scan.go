package stream

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// Fast decoding of the common streamed chunk. encoding/json was ~95% of the
// client's per-event CPU (3-8 µs and 11 allocations per vLLM chat chunk,
// docs/BENCHMARKS.md); this scanner reads the same fields in one pass and
// gives up, leaving the event to encoding/json, on anything it does not
// handle exactly as encoding/json would: escapes in keys or strings,
// invalid UTF-8, keys matching a field only case-insensitively, repeated
// keys, non-integer token counts, non-null "error" or "metrics" members,
// type mismatches and syntax errors. So when it succeeds its result is the
// one encoding/json would give, and every failure is reported by
// encoding/json's own error (FuzzChunkDecode checks both).

// scanner walks one JSON document.
type scanner struct {
	b     []byte
	i     int
	depth int
}

// decodeFast fills c from data and reports whether it could; c must have
// been reset. On false c is in an undefined state and must be reset again.
func (c *Chunk) decodeFast(data []byte) bool {
	s := scanner{b: data}
	var sawChoices, sawUsage bool // repeated, encoding/json would merge them
	if !s.object(func(key []byte) bool {
		switch string(key) {
		case "model":
			return s.stringInto(&c.Model, &c.lastModel)
		case "choices":
			if sawChoices {
				return false
			}
			sawChoices = true
			return s.choices(c)
		case "usage":
			if sawUsage {
				return false
			}
			sawUsage = true
			if s.null() {
				c.Usage = nil
				return true
			}
			c.usageBuf = Usage{}
			c.Usage = &c.usageBuf
			return s.usage(c)
		case "metrics", "error":
			return s.null()
		}
		return !chunkFieldFold(key) && s.skip()
	}) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

// chunkFieldFold reports a key that is not one of the chunk's fields but
// matches one case-insensitively, which encoding/json would decode.
func chunkFieldFold(key []byte) bool {
	for _, f := range [...]string{"model", "choices", "usage", "metrics", "error", "text", "delta", "finish_reason",
		"content", "reasoning", "reasoning_content", "tool_calls", "prompt_tokens", "completion_tokens",
		"completion_tokens_details", "reasoning_tokens"} {
		if bytes.EqualFold(key, []byte(f)) {
			return true
		}
	}
	return false
}

func (s *scanner) choices(c *Chunk) bool {
	if s.null() {
		c.Choices = nil
		return true
	}
	return s.array(func() bool {
		c.Choices = append(c.Choices, Choice{})
		ch := &c.Choices[len(c.Choices)-1]
		return s.object(func(key []byte) bool { return s.choiceField(ch, key) })
	})
}

func (s *scanner) choiceField(ch *Choice, key []byte) bool {
	switch string(key) {
	case "text":
		return s.stringInto(&ch.Text, nil)
	case "finish_reason":
		if s.null() {
			ch.FinishReason = nil
			return true
		}
		var v string
		if !s.stringInto(&v, nil) {
			return false
		}
		ch.FinishReason = &v
		return true
	case "delta":
		if s.null() {
			return true
		}
		return s.object(func(key []byte) bool {
			switch string(key) {
			case "content":
				return s.stringInto(&ch.Delta.Content, nil)
			case "reasoning":
				return s.stringInto(&ch.Delta.Reasoning, nil)
			case "reasoning_content":
				return s.stringInto(&ch.Delta.ReasoningContent, nil)
			case "tool_calls":
				start := s.spaceAt()
				if !s.skip() {
					return false
				}
				// A copy, as json.RawMessage keeps one.
				ch.Delta.ToolCalls = append(ch.Delta.ToolCalls[:0], s.b[start:s.i]...)
				return true
			}
			return !chunkFieldFold(key) && s.skip()
		})
	}
	return !chunkFieldFold(key) && s.skip()
}

func (s *scanner) usage(c *Chunk) bool {
	u := &c.usageBuf
	sawDetails := false // repeated, encoding/json would merge them
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return s.intInto(&u.PromptTokens)
		case "completion_tokens":
			return s.intInto(&u.CompletionTokens)
		case "completion_tokens_details":
			if sawDetails {
				return false
			}
			sawDetails = true
			return s.null() || s.tokensDetails(c)
		}
		return !chunkFieldFold(key) && s.skip()
	})
}

// tokensDetails reads usage.completion_tokens_details into c.usageBuf.
func (s *scanner) tokensDetails(c *Chunk) bool {
	d := &c.usageBuf.CompletionTokensDetails
	return s.object(func(key []byte) bool {
		if string(key) != "reasoning_tokens" {
			return !chunkFieldFold(key) && s.skip()
		}
		if s.null() {
			d.ReasoningTokens = nil
			return true
		}
		if !s.intInto(&c.reasonBuf) {
			return false
		}
		d.ReasoningTokens = &c.reasonBuf
		return true
	})
}

// object reads {"key": value, ...}, calling field for each key with the
// scanner positioned at the value.
func (s *scanner) object(field func(key []byte) bool) bool {
	return s.list('{', '}', func() bool {
		key, ok := s.rawString()
		return ok && s.consume(':') && field(key)
	})
}

// array reads [value, ...], calling elem for each value with the scanner
// positioned at it.
func (s *scanner) array(elem func() bool) bool {
	return s.list('[', ']', elem)
}

// list reads start, elements separated by commas, end: the shape an
// object and an array share. elem reads one element.
func (s *scanner) list(start, end byte, elem func() bool) bool {
	if !s.consume(start) || !s.enter() {
		return false
	}
	defer s.leave()
	if s.consume(end) {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.consume(end) {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// maxScanDepth bounds nesting; deeper documents go to encoding/json, which
// has its own bound, instead of growing the stack.
const maxScanDepth = 32

func (s *scanner) enter() bool {
	s.depth++
	return s.depth <= maxScanDepth
}

func (s *scanner) leave() { s.depth-- }

// stringInto reads a string without escapes into dst; reuse, when given,
// holds an earlier value that is returned instead of a new allocation when
// the bytes are equal.
func (s *scanner) stringInto(dst *string, reuse *string) bool {
	if s.null() {
		return true // encoding/json leaves a string unchanged on null
	}
	raw, ok := s.rawString()
	if !ok {
		return false
	}
	if reuse != nil && *reuse == string(raw) {
		*dst = *reuse
		return true
	}
	*dst = string(raw)
	if reuse != nil {
		*reuse = *dst
	}
	return true
}

// rawString reads a string made of valid UTF-8 without escapes or control
// characters and returns its bytes.
func (s *scanner) rawString() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			return raw, utf8.Valid(raw)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// skipString passes over any valid string, escapes included.
func (s *scanner) skipString() bool {
	if !s.consume('"') {
		return false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i >= len(s.b) {
				return false
			}
			e := s.b[s.i]
			s.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if s.i+4 > len(s.b) {
					return false
				}
				for _, h := range s.b[s.i : s.i+4] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// intInto reads an integer literal that fits an int.
func (s *scanner) intInto(dst *int) bool {
	if s.null() {
		return true
	}
	start := s.spaceAt()
	if !s.number() {
		return false
	}
	v, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return false // a fraction, an exponent or too large: encoding/json decides
	}
	*dst = v
	return true
}

// skip validates and passes over any value.
func (s *scanner) skip() bool {
	switch s.peek() {
	case '{':
		return s.object(func([]byte) bool { return s.skip() })
	case '[':
		return s.array(s.skip)
	case '"':
		return s.skipString()
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	return s.number()
}

// number passes over a number as the JSON grammar defines it.
func (s *scanner) number() bool {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return s.i > start
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// null consumes a null literal if one comes next.
func (s *scanner) null() bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	s.space()
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// consume skips white space and then c if it comes next.
func (s *scanner) consume(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// peek skips white space and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// spaceAt skips white space and returns the position.
func (s *scanner) spaceAt() int {
	s.space()
	return s.i
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}
