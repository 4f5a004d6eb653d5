package collector

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/memtest"
	"github.com/vllm-prober/vllm-prober/probe"
)

// TestWriteFormatAllocatesLittle: a scrape of 1,000 lean pairs, in the
// text format, OpenMetrics or protobuf, allocates a small part of its
// answer's ~4.5 MB: with no pair changed since the last scrape, the
// pairs' series as they are kept; with half of them changed, only theirs
// again (their encoding and the histograms' protobuf it is made from),
// less than half of what building the answer whole from Gather does (and
// than the answer itself in the text format, whose histograms are written
// without their native buckets). The answer is never held whole in memory.
func TestWriteFormatAllocatesLittle(t *testing.T) {
	cfg := leanConfig(100, 10)
	c := New(Options{Now: clock})
	syncPairs(c, cfg)
	pairs := cfg.Pairs()
	for i, p := range pairs {
		c.Offered(p.Key)
		c.Finished(&probe.Result{Target: p.Key.Target, Probe: p.Key.Probe, RequestID: fmt.Sprintf("chatcmpl-%d", i),
			Disposition: probe.Accepted, Sent: fixedNow, TTFT: 100 * time.Millisecond,
			E2EL: 400 * time.Millisecond, PromptTokens: 128, OutputTokens: 16})
	}
	j := Join(c)
	for _, format := range []expfmt.Format{expfmt.FmtText, expfmt.FmtOpenMetrics_1_0_0, expfmt.FmtProtoDelim} {
		var size countingWriter
		if err := j.WriteFormat(&size, format); err != nil {
			t.Fatal(err)
		}
		scrape := func() {
			if err := j.WriteFormat(io.Discard, format); err != nil {
				t.Fatal(err)
			}
		}
		if got := memtest.AllocatedBy(scrape); got > uint64(size)/20 {
			t.Errorf("%s: a scrape with no pair changed allocated %d bytes of a %d-byte answer, want at most 1/20", format, got, size)
		}
		whole := memtest.AllocatedBy(func() { // the answer built whole, as promhttp does
			mfs, err := j.Gather()
			if err != nil {
				t.Fatal(err)
			}
			enc := expfmt.NewEncoder(io.Discard, format)
			for _, mf := range mfs {
				if err := enc.Encode(mf); err != nil {
					t.Fatal(err)
				}
			}
		})
		for i := 0; i < len(pairs); i += 2 {
			c.Offered(pairs[i].Key)
		}
		if got := memtest.AllocatedBy(scrape); got > whole/2 || (format == expfmt.FmtText && got > uint64(size)) {
			t.Errorf("%s: a scrape with half of the pairs changed allocated %d bytes of a %d-byte answer, want less than half of "+
				"the %d bytes of building it whole (and, in the text format, less than the answer)", format, got, size, whole)
		}
	}
}

// countingWriter counts the bytes written to it.
type countingWriter int

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// TestSlowScrapeHoldsUpNothing: while a scrape's client does not read,
// pairs start and stop, results are counted and another scrape is
// answered, byte for byte as expfmt writes it; the slow scrape, once its
// client reads, gets the answer of the moment it began.
func TestSlowScrapeHoldsUpNothing(t *testing.T) {
	c, keys := everyKindOfPair("10.0.0.1:8000")
	j, format := Join(c), expfmt.FmtProtoDelim
	before := encodeFormat(t, j, format)
	w := &stalledWriter{written: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- j.WriteFormat(w, format) }()
	select {
	case <-w.written:
	case err := <-done:
		t.Fatalf("the scrape ended (%v) before its client read", err)
	}

	changed := make(chan struct{})
	go func() {
		defer close(changed)
		c.PairStopped(keys[1])
		c.PairStarted(config.Pair{Key: config.PairKey{Target: "t9", Probe: "new"}, Probe: config.Probe{Name: "new", API: config.APIChat}})
		c.Offered(keys[0])
		compareFormat(t, j, format)
	}()
	select {
	case <-changed:
	case <-time.After(time.Minute):
		t.Fatal("changes and another scrape waited for a client that does not read")
	}
	close(w.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := w.buf.String(); got != before {
		t.Errorf("the slow scrape's answer (%d bytes) is not the one of when it began (%d bytes)", len(got), len(before))
	}
}

// stalledWriter blocks its first Write until release closes, telling
// written when it is blocked, and keeps what it is given.
type stalledWriter struct {
	written, release chan struct{}
	buf              bytes.Buffer
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	if w.buf.Len() == 0 {
		close(w.written)
		<-w.release
	}
	return w.buf.Write(p)
}
