package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"

	"github.com/vllm-prober/vllm-prober/internal/filewrite"
)

// WriteFile writes a report file whole or not at all (filewrite.Whole),
// making the directory when missing (as vLLM does for --result-dir).
func WriteFile(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	return filewrite.Whole(path, buf.Bytes())
}

// Bytes adapts a byte slice to WriteFile.
func Bytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}
