package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
)

// syncBuffer is the log buffer a logger and a test share.
type syncBuffer = daemontest.SyncBuffer

// faultyWriter accepts up to budget bytes per write while failing, else
// everything.
type faultyWriter struct {
	mu      sync.Mutex
	failing bool
	budget  int
	data    bytes.Buffer
}

func (w *faultyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failing {
		n := min(w.budget, len(p))
		w.data.Write(p[:n])
		return n, errors.New("no space left on device")
	}
	return w.data.Write(p)
}

func (w *faultyWriter) Close() error { return nil }

func (w *faultyWriter) set(failing bool, budget int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failing, w.budget = failing, budget
}

func (w *faultyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.data.String()
}

func seqResult(seq int) *probe.Result {
	return &probe.Result{Seq: uint64(seq), Target: "t", Probe: "p", Scheduled: testEpoch, Disposition: probe.Accepted}
}

// flushNow runs one flush as the flush timer would.
func flushNow(l *Ledger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

func readSeqs(t *testing.T, path string) []uint64 {
	t.Helper()
	recs, torn, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if torn != 0 {
		t.Errorf("%s: %d torn lines", path, torn)
	}
	seqs := make([]uint64, 0, len(recs))
	for _, r := range recs {
		seqs = append(seqs, r.Seq)
	}
	return seqs
}

func TestLedgerRotation(t *testing.T) {
	lineLen := int64(len(mustLine(t, seqResult(100))))
	for _, tc := range []struct {
		name     string
		maxFiles int
		records  int
	}{
		{"keeps max_files rotated files", 3, 100},
		{"max_files 0 keeps only the current file", 0, 50},
		{"no rotation when small", 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.jsonl")
			perFile := 5
			l, err := openLedger(config.Ledger{Path: path, MaxFiles: tc.maxFiles}, nil,
				ledgerOptions{afterFunc: (&manualTimer{}).afterFunc, maxBytes: lineLen*int64(perFile) + 1})
			if err != nil {
				t.Fatal(err)
			}
			for i := 100; i < 100+tc.records; i++ {
				l.Write(seqResult(i))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Newest first: path, path.1, ... each holding up to perFile
			// consecutive records, together the last ones written.
			next := uint64(100 + tc.records)
			files := []string{path}
			for i := 1; i <= tc.maxFiles; i++ {
				files = append(files, fmt.Sprintf("%s.%d", path, i))
			}
			for _, f := range files {
				if next == 100 {
					if _, err := os.Stat(f); err == nil {
						t.Errorf("%s exists, all records are in newer files", f)
					}
					continue
				}
				seqs := readSeqs(t, f)
				if len(seqs) == 0 || len(seqs) > perFile {
					t.Fatalf("%s holds %d records, want 1..%d", f, len(seqs), perFile)
				}
				for i := len(seqs) - 1; i >= 0; i-- {
					next--
					if seqs[i] != next {
						t.Fatalf("%s: seqs %v, want to end at %d", f, seqs, next)
					}
				}
			}
			if _, err := os.Stat(fmt.Sprintf("%s.%d", path, tc.maxFiles+1)); err == nil {
				t.Errorf("more than %d rotated files kept", tc.maxFiles)
			}
		})
	}
}

func mustLine(t *testing.T, r *probe.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	l := &Ledger{path: "x", open: func(string) (io.WriteCloser, int64, error) { return nopCloser{&b}, 0, nil }}
	l.Write(r)
	flushNow(l)
	return b.Bytes()
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// manualTimer is the ledger's flush timer in tests: it fires only when the
// test calls fire, and counts how often the ledger armed it.
type manualTimer struct {
	mu      sync.Mutex
	pending []func()
	armed   int
}

func (m *manualTimer) afterFunc(_ time.Duration, f func()) func() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.armed++
	i := len(m.pending)
	m.pending = append(m.pending, f)
	return func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		was := m.pending[i] != nil
		m.pending[i] = nil
		return was
	}
}

// fire runs every armed, unstopped timer and returns how many ran.
func (m *manualTimer) fire() int {
	m.mu.Lock()
	fs := m.pending
	m.pending = nil
	m.mu.Unlock()
	n := 0
	for _, f := range fs {
		if f != nil {
			f()
			n++
		}
	}
	return n
}

func (m *manualTimer) armedCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.armed
}

// openTimed opens a ledger in a temporary directory whose flush timer the
// test fires.
func openTimed(t *testing.T) (*Ledger, string, *manualTimer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	timer := &manualTimer{}
	l, err := openLedger(config.Ledger{Path: path}, nil, ledgerOptions{afterFunc: timer.afterFunc})
	if err != nil {
		t.Fatal(err)
	}
	return l, path, timer
}

// TestLedgerFlushTimer: a buffered record arms one flush timer, which
// writes it; an idle ledger (nothing buffered) has no timer at all, so it
// never wakes the process.
func TestLedgerFlushTimer(t *testing.T) {
	l, path, timer := openTimed(t)
	defer l.Close()
	for i, step := range []struct {
		name      string
		write     int
		fire      bool
		wantFired int
		wantArmed int
		want      int
	}{
		{"idle after open: no timer", 0, true, 0, 0, 0},
		{"buffered until the timer, armed once", 2, false, 0, 1, 0},
		{"flushed by the timer", 0, true, 1, 1, 2},
		{"idle again: no timer", 0, true, 0, 1, 2},
		{"next write arms it again", 1, false, 0, 2, 2},
		{"the timer flushes it", 0, true, 1, 2, 3},
	} {
		t.Run(step.name, func(t *testing.T) {
			for j := range step.write {
				l.Write(seqResult(i*10 + j))
			}
			if step.fire {
				if got := timer.fire(); got != step.wantFired {
					t.Errorf("%d timers fired, want %d", got, step.wantFired)
				}
			}
			if got := timer.armedCount(); got != step.wantArmed {
				t.Errorf("timer armed %d times, want %d", got, step.wantArmed)
			}
			if got := len(readSeqs(t, path)); got != step.want {
				t.Errorf("%d records in the file, want %d", got, step.want)
			}
		})
	}
}

// TestLedgerIdleRunsNothing: the production ledger starts no goroutine
// of its own (no ticker loop), and its real timer still writes a record
// without a Close.
func TestLedgerIdleRunsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	before := runtime.NumGoroutine()
	l := mustOpen(t, config.Ledger{Path: path})
	defer l.Close()
	// Polled, in case a goroutine of the runtime or the test framework
	// comes or goes meanwhile; a ledger's own loop would stay.
	daemontest.Poll(t, time.Second, 10*time.Millisecond, "no goroutine of an idle ledger", func() bool {
		return runtime.NumGoroutine() == before
	})
	l.Write(seqResult(7))
	daemontest.Poll(t, 5*time.Second, 20*time.Millisecond, "the timed flush", func() bool {
		return len(readSeqs(t, path)) == 1
	})
}

// TestLedgerEarlyFlushDisarmsTimer: a flush before the timer (a full
// buffer, a rotation) stops it; Close stops it too.
func TestLedgerEarlyFlushDisarmsTimer(t *testing.T) {
	l, path, timer := openTimed(t)
	l.Write(seqResult(1))
	flushNow(l)
	if got := timer.fire(); got != 0 {
		t.Errorf("after an early flush %d timers fired, want 0", got)
	}
	l.Write(seqResult(2))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := timer.fire(); got != 0 {
		t.Errorf("after Close %d timers fired, want 0", got)
	}
	if got := readSeqs(t, path); len(got) != 2 {
		t.Errorf("records %v, want 2", got)
	}
}

func TestLedgerWriteErrors(t *testing.T) {
	w := &faultyWriter{}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	l, err := openLedger(config.Ledger{Path: "ledger.jsonl"}, logger, ledgerOptions{
		afterFunc: (&manualTimer{}).afterFunc,
		open:      func(string) (io.WriteCloser, int64, error) { return w, 0, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		name        string
		failing     bool
		budget      int
		writes      int
		wantErrors  uint64
		wantHealthy bool
	}{
		{"healthy", false, 0, 2, 0, true},
		{"disk full loses every record", true, 0, 3, 3, false},
		{"partial write loses the records it cut", true, 30, 2, 5, false},
		{"still failing", true, 0, 1, 6, false},
		{"recovered", false, 0, 2, 6, true},
	} {
		t.Run(step.name, func(t *testing.T) {
			w.set(step.failing, step.budget)
			for j := range step.writes {
				l.Write(seqResult(100*i + j))
			}
			flushNow(l)
			if got := l.WriteErrors(); got != step.wantErrors {
				t.Errorf("WriteErrors = %d, want %d", got, step.wantErrors)
			}
			if got := l.Healthy(); got != step.wantHealthy {
				t.Errorf("Healthy = %v, want %v", got, step.wantHealthy)
			}
		})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Run("state changes logged once", func(t *testing.T) {
		out := logs.String()
		if n := strings.Count(out, "ledger writes failing"); n != 1 {
			t.Errorf("%d failing warnings, want 1:\n%s", n, out)
		}
		if n := strings.Count(out, "ledger writes recovered"); n != 1 {
			t.Errorf("%d recovery messages, want 1:\n%s", n, out)
		}
	})
	t.Run("partial line kept apart from later records", func(t *testing.T) {
		recs, torn, err := readRecords(strings.NewReader(w.String()))
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, r := range recs {
			seqs = append(seqs, r.Seq)
		}
		if want := []uint64{0, 1, 400, 401}; fmt.Sprint(seqs) != fmt.Sprint(want) || torn != 1 {
			t.Errorf("seqs %v torn %d, want %v torn 1", seqs, torn, want)
		}
	})
	t.Run("writes after close are counted", func(t *testing.T) {
		l.Write(seqResult(1))
		if got := l.WriteErrors(); got != 7 {
			t.Errorf("WriteErrors = %d, want 7", got)
		}
	})
}

func TestLedgerOpenFailure(t *testing.T) {
	notDir := testfile.Temp(t, "file", "")
	_, err := Open(config.Ledger{Path: filepath.Join(notDir, "ledger.jsonl")}, nil)
	if err == nil || !strings.Contains(err.Error(), "open ledger") {
		t.Errorf("err = %v, want an open ledger error", err)
	}
}

func TestLedgerMakesItsDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "dir", "ledger.jsonl")
	l, err := Open(config.Ledger{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Write(&probe.Result{Seq: 1, Target: "t", Probe: "p", Disposition: probe.Accepted})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if recs, _, err := Read(path); err != nil || len(recs) != 1 {
		t.Errorf("Read = %d records, %v; want 1", len(recs), err)
	}
}

func TestLedgerDisabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    *Ledger
	}{
		{"empty path", mustOpen(t, config.Ledger{})},
		{"nil ledger", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.l.Write(seqResult(1))
			if err := tc.l.Close(); err != nil || tc.l.WriteErrors() != 0 || !tc.l.Healthy() {
				t.Errorf("Close %v, WriteErrors %d, Healthy %v", err, tc.l.WriteErrors(), tc.l.Healthy())
			}
		})
	}
}

func mustOpen(t *testing.T, cfg config.Ledger) *Ledger {
	t.Helper()
	l, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLedgerCloseKeepsEveryRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l := mustOpen(t, config.Ledger{Path: path, MaxSizeMB: 64, MaxFiles: 2})
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				l.Write(seqResult(w*each + i))
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, s := range readSeqs(t, path) {
		seen[s] = true
	}
	if len(seen) != writers*each || l.WriteErrors() != 0 {
		t.Errorf("%d distinct records, %d write errors; want %d and 0", len(seen), l.WriteErrors(), writers*each)
	}
}

func BenchmarkLedgerWrite(b *testing.B) {
	l, err := Open(config.Ledger{Path: filepath.Join(b.TempDir(), "ledger.jsonl"), MaxSizeMB: 64, MaxFiles: 2,
		RecordText: config.RecordTextFailures}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	r := fullResult()
	b.ReportAllocs()
	for b.Loop() {
		r.Seq++
		l.Write(r)
	}
}

// TestLedgerReopensAVanishedFile deletes, replaces and blocks the ledger's
// file while the ledger runs: records go to the file at the path, made
// again with its directory, and only what cannot be written is counted.
func TestLedgerReopensAVanishedFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	path := filepath.Join(dir, "ledger.jsonl")
	var logs syncBuffer
	l, err := openLedger(config.Ledger{Path: path}, slog.New(slog.NewTextHandler(&logs, nil)), ledgerOptions{afterFunc: (&manualTimer{}).afterFunc})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Write(seqResult(1))
	flushNow(l)

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	l.Write(seqResult(2))
	flushNow(l)
	if got := readSeqs(t, path); fmt.Sprint(got) != "[2]" || l.WriteErrors() != 0 || l.Reopens() != 1 || !l.Healthy() {
		t.Fatalf("after deleting the directory: file has %v, %d write errors, %d reopens, healthy %v; want [2], 0, 1, true",
			got, l.WriteErrors(), l.Reopens(), l.Healthy())
	}

	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{\"seq\":9}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l.Write(seqResult(3))
	flushNow(l)
	if got := readSeqs(t, path); fmt.Sprint(got) != "[9 3]" || l.Reopens() != 2 {
		t.Fatalf("after replacing the file: file has %v, %d reopens; want [9 3], 2", got, l.Reopens())
	}

	// A file where the directory was cannot be made a directory again.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l.Write(seqResult(4))
	l.Write(seqResult(5))
	flushNow(l)
	if l.WriteErrors() != 2 || l.Healthy() {
		t.Fatalf("with the directory blocked: %d write errors, healthy %v; want 2, false", l.WriteErrors(), l.Healthy())
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	l.Write(seqResult(6))
	flushNow(l)
	if got := readSeqs(t, path); fmt.Sprint(got) != "[6]" || !l.Healthy() {
		t.Fatalf("after unblocking: file has %v, healthy %v; want [6], true", got, l.Healthy())
	}
	for _, want := range []string{"ledger file vanished or was replaced, reopening it", "ledger writes failing", "ledger writes recovered"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}
