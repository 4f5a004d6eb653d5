// Package streamtest holds what benchmarks of the stream reader share.
package streamtest

import "io"

// Loop returns a reader that serves data again and again, never ending and
// without allocating, so that a benchmark measures the reader, not its input.
func Loop(data []byte) io.Reader {
	return &loop{data: data}
}

type loop struct {
	data []byte
	off  int
}

func (l *loop) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}
