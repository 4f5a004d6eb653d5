package server

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxServerLabelBytes caps a label value taken from a server's answer (the
// model id of /v1/models and the version of /version on
// vllm_probe_target_info): longer values are cut to this many bytes, the
// last three of which become "...".
const MaxServerLabelBytes = 256

// serverLabel makes text a server sent safe as a label value: invalid
// UTF-8 and control characters (newlines, escapes, C1 codes) become U+FFFD
// and the result is at most MaxServerLabelBytes long.
func serverLabel(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return '\uFFFD'
		}
		return r
	}, s)
	if len(s) <= MaxServerLabelBytes {
		return s
	}
	cut := MaxServerLabelBytes - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
