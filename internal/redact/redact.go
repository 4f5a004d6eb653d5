// Package redact hides the parts of URLs that carry secrets (user info and
// query values) in any text the prober shows: error messages, logs, the
// status page and the ledger.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces every hidden part.
const Mask = "xxxxx"

// urlRE matches a URL with a scheme up to the first character that cannot
// be part of it in running text (space, quotes, angle brackets).
var urlRE = regexp.MustCompile("[a-zA-Z][a-zA-Z0-9+.-]*://[^\\s\"'<>`]+")

// Text returns s with the user info and query values of every URL in it
// replaced by Mask. A token written as a URL's user name
// (http://TOKEN@host) is hidden as well as a password, and so is a query
// parameter that is a bare token (?TOKEN). Text without "://" is returned
// as is, without allocating.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlRE.ReplaceAllStringFunc(s, URL)
}

// URL returns the URL u with its user info and query values replaced by
// Mask. u need not parse: the parts are found by their delimiters, as a
// server or a hand-written config may hold anything.
func URL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		authority = Mask + authority[at:]
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if !hasQuery {
		return scheme + "://" + authority + tail
	}
	query, fragment, hasFragment := strings.Cut(query, "#")
	var b strings.Builder
	b.WriteString(scheme + "://" + authority + path + "?" + maskQuery(query))
	if hasFragment {
		b.WriteString("#" + fragment)
	}
	return b.String()
}

// maskQuery keeps the parameter names of a query and hides their values;
// a parameter without "=" is hidden whole.
func maskQuery(q string) string {
	if q == "" {
		return q
	}
	params := strings.Split(q, "&")
	for i, p := range params {
		if p == "" {
			continue
		}
		if name, _, ok := strings.Cut(p, "="); ok {
			params[i] = name + "=" + Mask
		} else {
			params[i] = Mask
		}
	}
	return strings.Join(params, "&")
}
