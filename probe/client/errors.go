package client

import (
	"bytes"
	"encoding/json"
)

// apiError is the body of vLLM's error responses and in-stream error
// events: {"error": {"message", "type", "param", "code"}}, or, from the
// auth middleware, {"error": "Unauthorized"}.
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

// errorMessage renders an "error" member as a short message.
func errorMessage(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return truncate(s, maxErrorLen)
	}
	var e apiError
	if json.Unmarshal(raw, &e) != nil || (e.Message == "" && e.Type == "") {
		return truncate(string(raw), maxErrorLen)
	}
	if e.Type == "" {
		return truncate(e.Message, maxErrorLen)
	}
	return truncate(e.Type+": "+e.Message, maxErrorLen)
}

// bodyErrorMessage extracts the message of a non-200 response body, falling
// back to its first bytes.
func bodyErrorMessage(body []byte) string {
	var b struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &b) == nil {
		if len(b.Error) > 0 && !bytes.Equal(b.Error, []byte("null")) {
			return errorMessage(b.Error)
		}
		if b.Message != "" {
			return truncate(b.Message, maxErrorLen)
		}
	}
	return truncate(string(bytes.TrimSpace(body)), maxErrorLen)
}

// maxErrorLen bounds Result.Error.
const maxErrorLen = 256

// truncate shortens s to at most n bytes without splitting a UTF-8
// sequence, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "..."
}
