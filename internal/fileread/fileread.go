// Package fileread reads the files a user names (the configuration and the
// datasets, JSON schemas and credential files it refers to) with a size
// cap, and refuses anything but a regular file, so a symlink to /dev/zero
// cannot grow memory without bound and a FIFO cannot block a reload.
package fileread

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Size caps of the files read, documented in README.md's "Security".
const (
	// ConfigLimit caps the configuration file.
	ConfigLimit = 4 << 20
	// DatasetLimit caps a probe's workload.file, which the daemon holds in
	// memory.
	DatasetLimit = 256 << 20
	// BenchDatasetLimit caps bench's --dataset-path, large enough for
	// ShareGPT_V3_unfiltered_cleaned_split.json.
	BenchDatasetLimit = 2 << 30
	// SchemaLimit caps a JSON schema file, and each file it refers to.
	SchemaLimit = 4 << 20
	// CredentialLimit caps a credential, header or TLS file named in an
	// http_client_config.
	CredentialLimit = 1 << 20
)

// ErrTooLarge is the cause of a file larger than its cap.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is the cause of a file that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTimeout is the cause of a read that did not finish in time.
var ErrTimeout = errors.New("read did not finish")

// ReadWithin is Read that gives up after timeout, for a file on a mount
// that stopped answering: a read cannot be interrupted, so it is left to
// finish in the background and its result is dropped.
func ReadWithin(path string, limit int64, timeout time.Duration) ([]byte, error) {
	return within(path, timeout, func() ([]byte, error) { return Read(path, limit) })
}

func within(path string, timeout time.Duration, read func() ([]byte, error)) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1) // the abandoned read never blocks on it
	go func() {
		b, err := read()
		done <- result{b, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.b, r.err
	case <-t.C:
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w in %s", ErrTimeout, timeout)}
	}
}

// Open opens path for reading and checks, on the open file, that it is a
// regular file (symlinks followed) of at most limit bytes. The open never
// blocks on a FIFO without a writer. Errors name path.
func Open(path string, limit int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err // *fs.PathError names path
	}
	st, err := f.Stat()
	if err == nil {
		err = Check(path, st, limit)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Check returns an error naming path when st is not a regular file or is
// larger than limit bytes.
func Check(path string, st fs.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(st.Mode()))}
	}
	if st.Size() > limit {
		return tooLarge(path, limit)
	}
	return nil
}

// Stat checks path the way Open does without opening it: for files read
// later by code that cannot cap its reads.
func Stat(path string, limit int64) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return Check(path, st, limit)
}

// Read reads the whole file at path, refusing non-regular files and files
// larger than limit bytes (also one that grows past it while read).
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(Limit(f, path, limit))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Limit returns a reader of r that fails with ErrTooLarge, naming path,
// once more than limit bytes were read.
func Limit(r io.Reader, path string, limit int64) io.Reader {
	return &limitReader{r: r, path: path, limit: limit, left: limit + 1}
}

type limitReader struct {
	r           io.Reader
	path        string
	limit, left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, tooLarge(l.path, l.limit)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left <= 0 {
		return n - 1, tooLarge(l.path, l.limit)
	}
	return n, err
}

func tooLarge(path string, limit int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: over the %s cap", ErrTooLarge, Size(limit))}
}

// Size formats a cap in the largest binary unit that divides it.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// kind names a file mode that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}
