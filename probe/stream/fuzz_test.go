package stream

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// refSSE is a deliberately simple reference parser over the whole input:
// the incremental reader must agree with it however the input is split.
func refSSE(in []byte, maxLine int) ([]string, error) {
	in = bytes.TrimPrefix(in, sseBOM)
	var (
		events  []string
		data    []byte
		hasData bool
	)
	for len(in) > 0 {
		i := indexLineEnd(in)
		if i < 0 {
			if len(in) > maxLine {
				return events, ErrLineTooLong
			}
			return events, io.EOF
		}
		if i > maxLine {
			return events, ErrLineTooLong
		}
		line := in[:i]
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
		switch {
		case len(line) == 0:
			if hasData {
				events = append(events, string(data))
			}
			data, hasData = nil, false
		case line[0] == ':':
		default:
			name, value, found := bytes.Cut(line, []byte(":"))
			if found && len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
			if string(name) != "data" {
				continue
			}
			if hasData {
				data = append(data, '\n')
			}
			hasData = true
			if len(data)+len(value) > maxLine {
				return events, ErrLineTooLong
			}
			data = append(data, value...)
		}
	}
	return events, io.EOF
}

// splitBy cuts in into pieces whose lengths cycle through cuts.
func splitBy(in, cuts []byte) []string {
	var out []string
	for k := 0; len(in) > 0; k++ {
		n := len(in)
		if len(cuts) > 0 {
			n = min(n, int(cuts[k%len(cuts)])%16+1)
		}
		out = append(out, string(in[:n]))
		in = in[n:]
	}
	return out
}

func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"), []byte{3, 7})
	f.Add([]byte("data: a\r\n\r\ndata: b\rdata: c\r\r: x\n\n"), []byte{1})
	f.Add([]byte("\xef\xbb\xbfdata\n\nevent: e\ndata:x\ndata: y\n\n"), []byte{2, 0})
	f.Add([]byte("data: 0123456789abcdef0123456789abcdef\n\n"), []byte{5})
	f.Fuzz(func(t *testing.T, in, cuts []byte) {
		const maxLine = 24
		want, wantErr := refSSE(in, maxLine)
		got, err := collectSSE(&piecesReader{pieces: splitBy(in, cuts)}, maxLine)
		if !errors.Is(err, wantErr) {
			t.Fatalf("err = %v, want %v (input %q)", err, wantErr, in)
		}
		if len(got) != len(want) {
			t.Fatalf("events = %q, want %q (input %q)", got, want, in)
		}
		for i := range got {
			if len(got[i]) > maxLine || got[i] != want[i] {
				t.Fatalf("events = %q, want %q (input %q)", got, want, in)
			}
		}
	})
}
