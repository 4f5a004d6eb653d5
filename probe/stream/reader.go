// Package stream reads the streamed responses of vLLM's OpenAI-compatible
// endpoints: a bounded server-sent event reader that stamps each event with
// its arrival time, and the chunk an event carries, decoded by a fast
// scanner with encoding/json as the fallback.
package stream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
	"time"
)

// DefaultMaxLineBytes is the default bound of one SSE line.
const DefaultMaxLineBytes = 1 << 20

// sseBufferSize is the size of the SSE reader's buffer; lines longer than it
// are assembled in a scratch slice up to the line bound. Each request has
// its own reader: at 1,000 requests/s a 32 KiB buffer allocated per request
// was half of the daemon's allocated bytes and its garbage collection
// competed with reading events. An event of a streamed completion is a few
// hundred bytes; 4 KiB (bufio's default) holds a read of several. A Reader
// that is closed hands its buffer to the next one (bufs).
const sseBufferSize = 4 << 10

// bufs holds the buffers of closed Readers for new ones.
var bufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, sseBufferSize) }}

// ErrLineTooLong makes a stream malformed: one of its lines is longer than
// the reader's bound.
var ErrLineTooLong = errors.New("sse line longer than the limit")

var (
	sseDone      = []byte("[DONE]")
	sseDataField = []byte("data")
	sseBOM       = []byte("\xef\xbb\xbf")
)

// Event is one dispatched server-sent event.
type Event struct {
	// Data is the event's data lines joined with "\n". It is valid until
	// the next call to next.
	Data []byte
	// At is when the bytes that completed the event (its terminating
	// blank line) came off the wire.
	At time.Time
	// Done reports the "[DONE]" sentinel.
	Done bool
}

// stampedReader remembers when its last successful read returned, so an
// event's time is the arrival of its bytes, not when the parser got to it.
type stampedReader struct {
	r    io.Reader
	now  func() time.Time
	last time.Time
}

func (s *stampedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.last = s.now()
	}
	return n, err
}

// Reader parses a text/event-stream incrementally (WHATWG HTML, server
// sent events): LF, CRLF and CR line ends, ":" comments, multi-line data,
// unknown fields ignored. Lines and events are bounded by maxLine; past it
// Next returns ErrLineTooLong instead of growing without bound.
type Reader struct {
	src     stampedReader
	br      *bufio.Reader
	maxLine int
	line    []byte // scratch for a line that spans buffer refills
	data    []byte // data of the event being assembled
	hasData bool
	skipLF  bool // the previous line ended in CR: a following LF belongs to it
	started bool // the optional BOM has been checked
}

// NewReader returns a reader over r that stamps arrivals with now.
func NewReader(r io.Reader, maxLine int, now func() time.Time) *Reader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	s := &Reader{maxLine: maxLine}
	s.src = stampedReader{r: r, now: now}
	s.br = bufs.Get().(*bufio.Reader)
	s.br.Reset(&s.src)
	return s
}

// Close hands the reader's buffer to the next Reader; the events s
// returned, and s itself, must not be used after it. Closing twice does
// nothing more; Close does not close the input.
func (s *Reader) Close() {
	if s.br == nil {
		return
	}
	s.br.Reset(nil)
	bufs.Put(s.br)
	s.br = nil
}

// Next returns the next event. At the end of the input it returns io.EOF
// (an event without its terminating blank line is dropped, as the standard
// says); read errors of the underlying reader are returned as they are.
func (s *Reader) Next() (Event, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			if !s.hasData {
				continue
			}
			ev := Event{Data: s.data, At: s.src.last, Done: bytes.Equal(s.data, sseDone)}
			s.hasData = false
			return ev, nil
		}
		if err := s.field(line); err != nil {
			return Event{}, err
		}
	}
}

// field applies one non-empty line to the event being assembled.
func (s *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	if !bytes.Equal(name, sseDataField) {
		return nil
	}
	if !s.hasData {
		s.data = s.data[:0]
		s.hasData = true
	} else {
		s.data = append(s.data, '\n')
	}
	if len(s.data)+len(value) > s.maxLine {
		return ErrLineTooLong
	}
	s.data = append(s.data, value...)
	return nil
}

// readLine returns the next line without its terminator. The slice is
// valid until the next call.
func (s *Reader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		buf, err := s.fill()
		if err != nil {
			if err == io.EOF && len(s.line) > 0 {
				// A last line without terminator cannot end an event.
				s.line = s.line[:0]
			}
			return nil, err
		}
		i := indexLineEnd(buf)
		if i < 0 {
			if len(s.line)+len(buf) > s.maxLine {
				return nil, ErrLineTooLong
			}
			s.line = append(s.line, buf...)
			_, _ = s.br.Discard(len(buf))
			continue
		}
		if len(s.line)+i > s.maxLine {
			return nil, ErrLineTooLong
		}
		s.skipLF = buf[i] == '\r'
		line := buf[:i]
		if len(s.line) > 0 {
			s.line = append(s.line, line...)
			line = s.line
		}
		// Discarding buffered bytes never reads, so line stays valid.
		_, _ = s.br.Discard(i + 1)
		return line, nil
	}
}

// fill returns the buffered bytes, reading only when the buffer is empty so
// that the latest read is always the one that delivered them. It drops a
// LF that completes a CRLF split across reads and a leading BOM.
func (s *Reader) fill() ([]byte, error) {
	for {
		n := s.br.Buffered()
		if n == 0 {
			n = 1
		}
		buf, err := s.br.Peek(n)
		if len(buf) == 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			return nil, err
		}
		if s.skipLF {
			s.skipLF = false
			if buf[0] == '\n' {
				_, _ = s.br.Discard(1)
				continue
			}
		}
		if !s.started {
			if len(buf) < len(sseBOM) && bytes.HasPrefix(sseBOM, buf) {
				if b, _ := s.br.Peek(len(sseBOM)); len(b) > len(buf) {
					continue
				}
			}
			s.started = true
			if bytes.HasPrefix(buf, sseBOM) {
				_, _ = s.br.Discard(len(sseBOM))
				continue
			}
		}
		return buf, nil
	}
}

// indexLineEnd returns the index of the first CR or LF in b, or -1.
func indexLineEnd(b []byte) int {
	for i, c := range b {
		if c == '\n' || c == '\r' {
			return i
		}
	}
	return -1
}
