// Package filewrite writes the files the commands produce (bench and
// capacity reports, charts, generated rules) whole or not at all, so a
// failed write (a full disk, a file size limit) never leaves half a file
// where a whole one is expected.
package filewrite

import (
	"os"
	"path/filepath"
)

// Whole writes b to path with mode 0o644 through a temporary file beside
// it, renamed over path once written and closed: path holds either its
// previous content or all of b. The temporary file is removed on failure.
func Whole(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
