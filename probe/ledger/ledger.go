// Package ledger keeps the JSON Lines ledger: one record per finished
// request, buffered and flushed within a second, the file reopened
// when it vanishes or is replaced, and read back for hand counts
// (docs/design.md, "Ledger").
package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

const (
	// ledgerFlushEvery bounds how long a record may sit in the buffer.
	ledgerFlushEvery = time.Second
	// ledgerBufferBytes is the buffered size that triggers an early flush.
	ledgerBufferBytes = 64 << 10
)

// errLedgerClosed is the cause of records written after Close.
var errLedgerClosed = errors.New("ledger closed")

// Ledger is the append-only JSON Lines file of every finished request. It
// buffers whole lines and writes them within a second of the first one
// buffered, before a rotation and on Close, so a clean shutdown never
// leaves a torn record. The flush timer is armed only while a line waits:
// an idle ledger wakes nobody.
// A failing disk never stops probing: lost records are counted in
// WriteErrors and the state change is logged once. A file deleted or
// replaced under it is opened again at the next flush (see Reopens). A Ledger with an empty
// path writes nothing. Its methods are safe for concurrent use, and a nil
// *Ledger is a valid disabled ledger.
type Ledger struct {
	logger     *slog.Logger
	path       string
	recordText string
	maxBytes   int64 // 0 = never rotate
	maxFiles   int
	open       func(path string) (io.WriteCloser, int64, error)

	mu             sync.Mutex
	w              io.WriteCloser // nil while the file could not be opened
	size           int64          // bytes in the current file
	buf            []byte         // whole lines not yet written
	pendingNewline bool           // a failed write left a partial line behind
	unhealthy      bool
	closed         bool

	afterFunc func(d time.Duration, f func()) (stop func() bool)
	stopFlush func() bool // the armed flush timer's stop; nil when none is armed

	writeErrors atomic.Uint64
	reopens     atomic.Uint64
}

// ledgerOptions are the seams tests use; the zero value is production.
type ledgerOptions struct {
	// afterFunc arms the flush timer: f runs once, d from now, unless
	// stop is called first. nil = time.AfterFunc.
	afterFunc func(d time.Duration, f func()) (stop func() bool)
	open      func(path string) (io.WriteCloser, int64, error)
	maxBytes  int64 // overrides cfg.MaxSizeMB when > 0
}

// Open opens (appending to) the ledger file of cfg. An empty cfg.Path
// returns a Ledger that writes nothing.
func Open(cfg config.Ledger, logger *slog.Logger) (*Ledger, error) {
	return openLedger(cfg, logger, ledgerOptions{})
}

func openLedger(cfg config.Ledger, logger *slog.Logger, o ledgerOptions) (*Ledger, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Ledger{
		logger:     logger,
		path:       cfg.Path,
		recordText: cfg.RecordText,
		maxBytes:   int64(max(cfg.MaxSizeMB, 0)) << 20,
		maxFiles:   max(cfg.MaxFiles, 0),
		open:       o.open,
		afterFunc:  o.afterFunc,
	}
	if l.path == "" {
		return l, nil
	}
	if o.maxBytes > 0 {
		l.maxBytes = o.maxBytes
	}
	if l.open == nil {
		l.open = openAppend
	}
	w, size, err := l.open(l.path)
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	l.w, l.size = w, size
	return l, nil
}

// openAppend opens path for appending and returns its current size. A
// file whose last line was cut short (a crash mid-write) gets its newline
// first, so the next record starts on a line of its own.
func openAppend(path string) (io.WriteCloser, int64, error) {
	// Like a log file, the ledger's directory is made when missing.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	size := st.Size()
	if size > 0 && st.Mode().IsRegular() && !endsWithNewline(path, size) {
		n, err := f.Write([]byte("\n"))
		size += int64(n)
		if err != nil {
			f.Close()
			return nil, 0, err
		}
	}
	return f, size, nil
}

// endsWithNewline reports whether the file of size bytes ends with '\n';
// a file it cannot read is taken as ending well.
func endsWithNewline(path string, size int64) bool {
	r, err := os.Open(path)
	if err != nil {
		return true
	}
	defer r.Close()
	b := make([]byte, 1)
	if _, err := r.ReadAt(b, size-1); err != nil {
		return true
	}
	return b[0] == '\n'
}

// timedFlush is the flush timer's function: it writes what is buffered
// and leaves the timer to be armed again by the next buffered line.
func (l *Ledger) timedFlush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopFlush == nil {
		return // Close or an early flush stopped it after it fired
	}
	l.stopFlush = nil
	l.flushLocked()
}

// Write appends the record of r. It never blocks on more than one buffered
// write and never fails: a record that cannot be written is counted.
func (l *Ledger) Write(r *probe.Result) {
	if l == nil || l.path == "" {
		return
	}
	line, err := json.Marshal(NewRecord(r, l.recordText))
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.closed {
		err = errLedgerClosed
	}
	if err != nil {
		l.failLocked(fmt.Errorf("encode record: %w", err), 1)
		return
	}
	line = append(line, '\n')
	pending := l.size + int64(len(l.buf))
	if l.maxBytes > 0 && pending > 0 && pending+int64(len(line)) > l.maxBytes {
		l.flushLocked()
		l.rotateLocked()
	}
	l.buf = append(l.buf, line...)
	if len(l.buf) >= ledgerBufferBytes {
		l.flushLocked()
		return
	}
	if l.stopFlush == nil {
		l.armFlushLocked()
	}
}

// armFlushLocked starts the flush timer.
func (l *Ledger) armFlushLocked() {
	if l.afterFunc != nil {
		l.stopFlush = l.afterFunc(ledgerFlushEvery, l.timedFlush)
		return
	}
	l.stopFlush = time.AfterFunc(ledgerFlushEvery, l.timedFlush).Stop
}

// flushLocked writes the buffered lines in one write and disarms the
// flush timer. Lines whose newline did not reach the file are lost and
// counted.
func (l *Ledger) flushLocked() {
	if l.stopFlush != nil {
		l.stopFlush()
		l.stopFlush = nil
	}
	if len(l.buf) == 0 {
		return
	}
	defer func() { l.buf = l.buf[:0] }()
	l.checkFileLocked()
	if l.w == nil {
		w, size, err := l.open(l.path)
		if err != nil {
			l.failLocked(fmt.Errorf("open ledger: %w", err), bytes.Count(l.buf, []byte("\n")))
			return
		}
		l.w, l.size, l.pendingNewline = w, size, false
	}
	data, prefix := l.buf, 0
	if l.pendingNewline {
		// End the partial line a failed write left, so it cannot glue
		// itself to the next record.
		data, prefix = append([]byte("\n"), data...), 1
	}
	n, err := l.w.Write(data)
	l.size += int64(n)
	if n > 0 {
		l.pendingNewline = data[n-1] != '\n'
	}
	if err == nil && n < len(data) {
		err = io.ErrShortWrite
	}
	if err != nil {
		written := max(n-prefix, 0)
		l.failLocked(fmt.Errorf("write ledger: %w", err), bytes.Count(l.buf[written:], []byte("\n")))
		return
	}
	if l.unhealthy {
		l.unhealthy = false
		l.logger.Info("ledger writes recovered", "path", l.path, "write_errors", l.writeErrors.Load())
	}
}

// checkFileLocked closes the open file when the path no longer names it
// (the file or its directory was deleted, or the file was moved or
// replaced), so that flushLocked reopens the path, making its directory
// again, instead of writing into a file no reader can find. Writers
// without a Stat method (tests' fakes) are not checked.
func (l *Ledger) checkFileLocked() {
	f, ok := l.w.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return
	}
	open, err := f.Stat()
	if err != nil {
		return
	}
	cur, err := os.Stat(l.path)
	if err == nil && os.SameFile(open, cur) {
		return
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return // the path cannot be checked (permissions); keep the open file
	}
	l.reopens.Add(1)
	l.logger.Warn("ledger file vanished or was replaced, reopening it", "path", l.path)
	if err := l.w.Close(); err != nil {
		l.logger.Warn("ledger close before reopening failed", "path", l.path, "err", err)
	}
	l.w = nil
}

// failLocked counts lost records and logs when the ledger starts failing.
func (l *Ledger) failLocked(err error, lost int) {
	l.writeErrors.Add(uint64(max(lost, 1)))
	if !l.unhealthy {
		l.unhealthy = true
		l.logger.Warn("ledger writes failing, records are being lost", "path", l.path, "err", err)
	}
}

// rotateLocked shifts path.N-1 .. path.1 up by one, moves the current file
// to path.1 and opens a fresh one. With max_files 0 the old file is
// removed. Failures are logged; writing goes on in whatever file opens.
func (l *Ledger) rotateLocked() {
	if l.w != nil {
		if err := l.w.Close(); err != nil {
			l.logger.Warn("ledger close before rotation failed", "path", l.path, "err", err)
		}
		l.w = nil
	}
	var errs []error
	if l.maxFiles == 0 {
		errs = append(errs, os.Remove(l.path))
	} else {
		errs = append(errs, os.Remove(l.rotated(l.maxFiles)))
		for i := l.maxFiles - 1; i >= 1; i-- {
			errs = append(errs, os.Rename(l.rotated(i), l.rotated(i+1)))
		}
		errs = append(errs, os.Rename(l.path, l.rotated(1)))
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.logger.Warn("ledger rotation failed", "path", l.path, "err", err)
		}
	}
	w, size, err := l.open(l.path)
	if err != nil {
		// flushLocked retries the open and counts what is lost.
		l.logger.Warn("ledger reopen after rotation failed", "path", l.path, "err", err)
		return
	}
	l.w, l.size, l.pendingNewline = w, size, false
}

// rotated returns the name of the i-th rotated file.
func (l *Ledger) rotated(i int) string {
	return l.path + "." + strconv.Itoa(i)
}

// Close flushes the buffer, syncs and closes the file. Records written
// after Close are counted as write errors. Close is idempotent.
func (l *Ledger) Close() error {
	if l == nil || l.path == "" {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	defer l.mu.Unlock()
	before := l.writeErrors.Load()
	l.flushLocked()
	var err error
	if lost := l.writeErrors.Load() - before; lost > 0 {
		err = fmt.Errorf("close ledger: %d records lost in the final flush", lost)
	}
	if l.w != nil {
		if s, ok := l.w.(interface{ Sync() error }); ok {
			err = errors.Join(err, wrapErr("sync ledger", s.Sync()))
		}
		err = errors.Join(err, wrapErr("close ledger", l.w.Close()))
		l.w = nil
	}
	return err
}

// wrapErr wraps err with context, keeping nil as nil.
func wrapErr(context string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", context, err)
}

// WriteErrors returns how many records could not be written.
func (l *Ledger) WriteErrors() uint64 {
	if l == nil {
		return 0
	}
	return l.writeErrors.Load()
}

// Reopens returns how many times the ledger file was found deleted or
// replaced and opened again.
func (l *Ledger) Reopens() uint64 {
	if l == nil {
		return 0
	}
	return l.reopens.Load()
}

// Healthy reports whether the last write succeeded.
func (l *Ledger) Healthy() bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.unhealthy
}
