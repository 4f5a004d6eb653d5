// Package logfilter wraps the prober's slog.Handler so that nothing it
// logs shows a secret written into a URL, and a warning that repeats
// (a target failing the same way on every scrape or request) cannot flood
// the log.
package logfilter

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/redact"
)

const (
	// DefaultWindow is how long an identical warning stays suppressed
	// after it was logged.
	DefaultWindow = time.Minute
	// maxKeys bounds the warnings remembered; past it, the oldest are
	// forgotten (and may be logged again early).
	maxKeys = 4096
	// SuppressedKey is the attribute of a repeated warning that counts the
	// identical ones suppressed since it was last logged.
	SuppressedKey = "suppressed"
)

// Options configure a Handler; the zero value is production.
type Options struct {
	// Window is DefaultWindow when 0.
	Window time.Duration
	// Now is time.Now when nil.
	Now func() time.Time
}

// Handler redacts the user info and query values of URLs in messages and
// attribute values, and logs a warning identical (same message and
// attributes) to one logged less than a window ago only once the window
// has passed, with the number suppressed in between.
type Handler struct {
	next   slog.Handler
	prefix string // attributes and groups added by WithAttrs/WithGroup, for the key
	lim    *limiter
}

type limiter struct {
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	seen   map[string]*seenWarning
}

type seenWarning struct {
	logged     time.Time
	suppressed int
}

// New wraps next.
func New(next slog.Handler, o Options) *Handler {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Handler{next: next, lim: &limiter{window: o.Window, now: o.Now, seen: map[string]*seenWarning{}}}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, redact.Text(r.Message), r.PC)
	var key strings.Builder
	if r.Level == slog.LevelWarn {
		key.WriteString(h.prefix + "\x00" + out.Message)
	}
	r.Attrs(func(a slog.Attr) bool {
		a = redactAttr(a)
		out.AddAttrs(a)
		if r.Level == slog.LevelWarn {
			fmt.Fprintf(&key, "\x00%s=%v", a.Key, a.Value)
		}
		return true
	})
	if r.Level == slog.LevelWarn {
		n, ok := h.lim.allow(key.String())
		if !ok {
			return nil
		}
		if n > 0 {
			out.AddAttrs(slog.Int(SuppressedKey, n))
		}
	}
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	var b strings.Builder
	b.WriteString(h.prefix)
	for i, a := range as {
		red[i] = redactAttr(a)
		fmt.Fprintf(&b, "\x00%s=%v", red[i].Key, red[i].Value)
	}
	return &Handler{next: h.next.WithAttrs(red), prefix: b.String(), lim: h.lim}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), prefix: h.prefix + "\x00group:" + name, lim: h.lim}
}

// allow reports whether the warning of key is logged now and how many
// identical ones were suppressed before it.
func (l *limiter) allow(key string) (int, bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.seen[key]; ok {
		if now.Sub(s.logged) < l.window {
			s.suppressed++
			return 0, false
		}
		n := s.suppressed
		s.logged, s.suppressed = now, 0
		return n, true
	}
	if len(l.seen) >= maxKeys {
		l.forget(now)
	}
	l.seen[key] = &seenWarning{logged: now}
	return 0, true
}

// forget drops warnings whose window has passed, or all of them when
// every one is recent: a flood of distinct warnings is not limited, but
// memory stays bounded.
func (l *limiter) forget(now time.Time) {
	for k, s := range l.seen {
		if now.Sub(s.logged) >= l.window {
			delete(l.seen, k)
		}
	}
	if len(l.seen) >= maxKeys {
		clear(l.seen)
	}
}

// redactAttr redacts string, error and Stringer values, also in groups.
func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redact.Text(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, ga := range g {
			out[i] = redactAttr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			if s := x.Error(); strings.Contains(s, "://") {
				return slog.String(a.Key, redact.Text(s))
			}
		case fmt.Stringer:
			if s := x.String(); strings.Contains(s, "://") {
				return slog.String(a.Key, redact.Text(s))
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
