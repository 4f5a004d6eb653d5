// Package fingerprint is the output drift canary of prompts probes run at
// temperature 0: it hashes the first tokens of every answer, and keeps per
// prompt a baseline that only a value seen on several consecutive requests
// replaces, so that batch nondeterminism (an isolated different answer) is
// not reported as a change of the model or its serving stack
// (docs/design.md, "Output fingerprint").
package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
)

// hashBytes is how much of the SHA-256 a fingerprint keeps: 64 bits, 16
// hex digits, enough to tell a prompt's few answers apart in a ledger.
const hashBytes = 8

// Hasher hashes the text of the first tokens of one answer. Not safe for
// concurrent use: one request owns it.
type Hasher struct {
	want, seen int
	h          hash.Hash
}

// NewHasher returns a Hasher of the first tokens output tokens.
func NewHasher(tokens int) *Hasher {
	return &Hasher{want: tokens, h: sha256.New()}
}

// Add feeds one token-carrying event: the text it carried and how many
// tokens (the continuous usage's increase; 0, unknown, counts as one).
// Events after the first tokens are ignored. Text is known per event, not
// per token, so the event that reaches the count is hashed whole.
func (h *Hasher) Add(text string, tokens int) {
	if h.seen >= h.want {
		return
	}
	h.seen += max(tokens, 1)
	_, _ = io.WriteString(h.h, text)
}

// Sum returns the fingerprint in hex: the hash of what was added, also
// when the answer ended before the count.
func (h *Hasher) Sum() string {
	return hex.EncodeToString(h.h.Sum(nil)[:hashBytes])
}
