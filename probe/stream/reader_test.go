package stream

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/probe/stream/streamtest"
)

// piecesReader returns one piece per Read, to split events across reads.
type piecesReader struct {
	pieces []string
	err    error // returned after the last piece; nil = io.EOF
}

func (p *piecesReader) Read(b []byte) (int, error) {
	if len(p.pieces) == 0 {
		if p.err != nil {
			return 0, p.err
		}
		return 0, io.EOF
	}
	n := copy(b, p.pieces[0])
	if n < len(p.pieces[0]) {
		p.pieces[0] = p.pieces[0][n:]
	} else {
		p.pieces = p.pieces[1:]
	}
	return n, nil
}

// tickClock returns a clock that advances one second per reading.
func tickClock() func() time.Time {
	t := time.Unix(1000, 0)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func collectSSE(r io.Reader, maxLine int) ([]string, error) {
	s := NewReader(r, maxLine, tickClock())
	var out []string
	for {
		ev, err := s.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(ev.Data))
	}
}

func TestSSEReader(t *testing.T) {
	errReset := errors.New("connection reset")
	tests := []struct {
		name    string
		pieces  []string
		err     error
		maxLine int
		want    []string
		wantErr error
	}{
		{name: "lf", pieces: []string{"data: a\n\ndata: b\n\n"}, want: []string{"a", "b"}, wantErr: io.EOF},
		{name: "crlf", pieces: []string{"data: a\r\n\r\ndata: b\r\n\r\n"}, want: []string{"a", "b"}, wantErr: io.EOF},
		{name: "cr", pieces: []string{"data: a\r\rdata: b\r\r"}, want: []string{"a", "b"}, wantErr: io.EOF},
		{name: "crlf split between reads", pieces: []string{"data: a\r", "\n\r", "\ndata: b\r\n\r\n"}, want: []string{"a", "b"}, wantErr: io.EOF},
		{name: "split inside field", pieces: []string{"da", "ta: {\"x\"", ":1}\n", "\n"}, want: []string{`{"x":1}`}, wantErr: io.EOF},
		{name: "byte by byte", pieces: strings.Split("data: xy\n\ndata: z\n\n", ""), want: []string{"xy", "z"}, wantErr: io.EOF},
		{name: "comments and other fields", pieces: []string{": keep-alive\nevent: x\nid: 1\nretry: 5\ndata: a\n\n: c\n\n"}, want: []string{"a"}, wantErr: io.EOF},
		{name: "multi-line data", pieces: []string{"data: a\ndata: b\ndata:c\n\n"}, want: []string{"a\nb\nc"}, wantErr: io.EOF},
		{name: "only one leading space stripped", pieces: []string{"data:  a \n\n"}, want: []string{" a "}, wantErr: io.EOF},
		{name: "field without colon", pieces: []string{"data\n\n"}, want: []string{""}, wantErr: io.EOF},
		{name: "done", pieces: []string{"data: a\n\ndata: [DONE]\n\n"}, want: []string{"a", "[DONE]"}, wantErr: io.EOF},
		{name: "bom", pieces: []string{"\xef\xbb\xbfdata: a\n\n"}, want: []string{"a"}, wantErr: io.EOF},
		{name: "bom split", pieces: []string{"\xef", "\xbb\xbfdata: a\n\n"}, want: []string{"a"}, wantErr: io.EOF},
		{name: "unterminated event dropped", pieces: []string{"data: a\n\ndata: b\n"}, want: []string{"a"}, wantErr: io.EOF},
		{name: "read error passed through", pieces: []string{"data: a\n\ndata: b"}, err: errReset, want: []string{"a"}, wantErr: errReset},
		{name: "line too long", maxLine: 8, pieces: []string{"data: 12345678\n\n"}, wantErr: ErrLineTooLong},
		{name: "line too long across reads", maxLine: 8, pieces: []string{"data: 12", "34", "5678", "9"}, wantErr: ErrLineTooLong},
		{name: "line at limit", maxLine: 8, pieces: []string{"data: 12\n\n"}, want: []string{"12"}, wantErr: io.EOF},
		{name: "event data too long", maxLine: 8, pieces: []string{"data: 1234\ndata: 5678\n\n"}, wantErr: ErrLineTooLong},
		{name: "long line over buffer", maxLine: 3 * sseBufferSize, pieces: []string{"data: " + strings.Repeat("x", 2*sseBufferSize) + "\n\n"},
			want: []string{strings.Repeat("x", 2*sseBufferSize)}, wantErr: io.EOF},
		{name: "empty", pieces: nil, wantErr: io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pieces := append([]string(nil), tc.pieces...)
			got, err := collectSSE(&piecesReader{pieces: pieces, err: tc.err}, tc.maxLine)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Fatalf("events = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSSEReaderTimestamps checks that an event is stamped with the read that
// delivered its terminating blank line, not with when it was parsed.
func TestSSEReaderTimestamps(t *testing.T) {
	// The clock ticks once per successful read: reads 1..4 are at
	// 1001s..1004s.
	r := &piecesReader{pieces: []string{"data: a\n", "\ndata: b\n\ndata: c\n\n", "data: d\n", "\n"}}
	s := NewReader(r, 0, tickClock())
	want := []struct {
		data string
		at   int64
		done bool
	}{{"a", 1002, false}, {"b", 1002, false}, {"c", 1002, false}, {"d", 1004, false}}
	for _, w := range want {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("event %q: %v", w.data, err)
		}
		if string(ev.Data) != w.data || ev.At.Unix() != w.at || ev.Done != w.done {
			t.Fatalf("got (%q, %d, %v), want (%q, %d, %v)", ev.Data, ev.At.Unix(), ev.Done, w.data, w.at, w.done)
		}
	}
}

func BenchmarkSSE(b *testing.B) {
	ev := streamtest.ChatEvent
	src := streamtest.Loop(bytes.Repeat([]byte(ev), 64))
	s := NewReader(src, 0, time.Now)
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSSEAndDecode(b *testing.B) {
	ev := streamtest.ChatEvent
	src := streamtest.Loop(bytes.Repeat([]byte(ev), 64))
	s := NewReader(src, 0, time.Now)
	var c Chunk
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	for b.Loop() {
		e, err := s.Next()
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Decode(e.Data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReaderAfterClose checks that a Reader whose buffer came from a closed
// one reads only its own input: the first reader stops with an event still
// buffered, and that event does not show in the later readers. Closing
// twice hands the buffer on once: two readers open after it never share
// one (their events, read in turn, stay their own).
func TestReaderAfterClose(t *testing.T) {
	for range 20 { // the pool may drop a buffer; some rounds reuse one
		first := NewReader(strings.NewReader("data: one\n\ndata: left in the buffer\n\n"), 0, time.Now)
		if ev, err := first.Next(); err != nil || string(ev.Data) != "one" {
			t.Fatalf("first reader: %q, %v", ev.Data, err)
		}
		first.Close()
		first.Close()
		a := NewReader(&piecesReader{pieces: []string{"data: a1\n\n", "data: a2\n\n"}}, 0, time.Now)
		b := NewReader(&piecesReader{pieces: []string{"data: b1\n\n", "data: b2\n\n"}}, 0, time.Now)
		for _, want := range []struct {
			r    *Reader
			data string
		}{{a, "a1"}, {b, "b1"}, {a, "a2"}, {b, "b2"}} {
			if ev, err := want.r.Next(); err != nil || string(ev.Data) != want.data {
				t.Fatalf("got %q, %v; want %q", ev.Data, err, want.data)
			}
		}
		for _, r := range []*Reader{a, b} {
			if ev, err := r.Next(); err != io.EOF {
				t.Fatalf("after its events: %q, %v; want EOF", ev.Data, err)
			}
			r.Close()
		}
	}
}
