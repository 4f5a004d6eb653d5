package logfilter

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// newLogger returns a logger through a Handler with a clock the test moves.
func newLogger(buf *bytes.Buffer, now *time.Time) *slog.Logger {
	text := slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})
	return slog.New(New(text, Options{Window: time.Minute, Now: func() time.Time { return *now }}))
}

func TestRepeatedWarningsAreSuppressedWithACount(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	log := newLogger(&buf, &now)
	for range 5 {
		log.Warn("scrape failed", "target", "a", "err", "refused")
		log.Warn("scrape failed", "target", "b", "err", "refused")
		log.Info("info is never limited", "target", "a")
		now = now.Add(time.Second)
	}
	log.With("target", "c").Warn("scrape failed", "err", "refused")
	log.With("target", "c").Warn("scrape failed", "err", "refused")
	now = now.Add(time.Minute)
	log.Warn("scrape failed", "target", "a", "err", "refused")
	log.Warn("scrape failed", "target", "a", "err", "other")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var warnA, warnB, warnC, infos int
	for _, l := range lines {
		switch {
		case strings.Contains(l, "info is never limited"):
			infos++
		case strings.Contains(l, "target=a"):
			warnA++
		case strings.Contains(l, "target=b"):
			warnB++
		case strings.Contains(l, "target=c"):
			warnC++
		}
	}
	if infos != 5 || warnA != 3 || warnB != 1 || warnC != 1 {
		t.Errorf("got %d infos, %d/%d/%d warnings for a/b/c, want 5, 3/1/1:\n%s", infos, warnA, warnB, warnC, buf.String())
	}
	if !strings.Contains(buf.String(), "target=a err=refused suppressed=4\n") {
		t.Errorf("the warning after the window does not count the 4 suppressed:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), "err=other suppressed") {
		t.Errorf("a different warning carries a count:\n%s", buf.String())
	}
}

func TestSecretsInURLsAreRedacted(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	log := newLogger(&buf, &now)
	log.With("url", "http://sk-WITH@h/").Info("msg http://sk-MSG@h/",
		"err", errors.New(`Get "http://sk-ERR@h/metrics?key=sk-QUERY": EOF`),
		slog.Group("g", "u", "https://u:sk-GROUP@h"))
	log.WithGroup("grp").Warn("w", "u", "http://sk-WARN@h")
	out := buf.String()
	for _, secret := range []string{"sk-WITH", "sk-MSG", "sk-ERR", "sk-QUERY", "sk-GROUP", "sk-WARN"} {
		if strings.Contains(out, secret) {
			t.Errorf("log shows %s:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "http://xxxxx@h/metrics?key=xxxxx") {
		t.Errorf("redacted URL not shown:\n%s", out)
	}
}
