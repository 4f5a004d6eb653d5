package discovery

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/vllm-prober/vllm-prober/internal/fileread"
)

// fileReadTimeout bounds the read of one file_sd file, for a file on a
// mount that stopped answering.
const fileReadTimeout = 10 * time.Second

// settle is how long a watched directory stays quiet before its changes
// are read: an editor or a config management tool writes a file in several
// steps, and reading in between would fail on a half-written file.
const settle = 200 * time.Millisecond

// maxSettle bounds the wait for a directory to settle: changes are read
// within about maxSettle+settle of the first one.
const maxSettle = 800 * time.Millisecond

// fileSource reads the files its globs match.
type fileSource struct {
	patterns []string // absolute
	logger   *slog.Logger
}

// newFileSD checks c and returns its source and refresh interval;
// relative globs are taken from baseDir.
func newFileSD(c FileSDConfig, baseDir string, logger *slog.Logger) (*fileSource, time.Duration, error) {
	if len(c.Files) == 0 {
		return nil, 0, invalid("file_sd.files", "at least one file or glob is required")
	}
	s := &fileSource{logger: logger}
	for i, p := range c.Files {
		if parserOf(p) == nil {
			return nil, 0, invalid(fmt.Sprintf("file_sd.files[%d]", i), "%q does not end in .json, .yml or .yaml", p)
		}
		if _, err := filepath.Match(p, ""); err != nil {
			return nil, 0, invalid(fmt.Sprintf("file_sd.files[%d]", i), "%q: %w", p, err)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(baseDir, p)
		}
		s.patterns = append(s.patterns, filepath.Clean(p))
	}
	return s, refreshOf(c.Refresh, DefaultFileSDRefresh), nil
}

// parserOf returns the parser of a file by its extension, nil for none.
func parserOf(name string) func(string, []byte) ([]Replica, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return parseJSON
	case ".yml", ".yaml":
		return parseYAML
	}
	return nil
}

// lookup reads every file the globs match, in lexical order of path. A
// glob that matches nothing adds nothing; a file that cannot be read or
// parsed fails the refresh.
func (s *fileSource) lookup(context.Context) ([]Replica, error) {
	var found []Replica
	for _, path := range s.files() {
		b, err := fileread.ReadWithin(path, maxDocumentSize, fileReadTimeout)
		if errors.Is(err, fs.ErrNotExist) { // removed since the glob
			continue
		}
		if err != nil {
			return nil, err // names the file
		}
		replicas, err := parserOf(path)(path, b)
		if err != nil {
			return nil, err
		}
		found = append(found, replicas...)
	}
	return found, nil
}

// files returns the paths the globs match, sorted, each once.
func (s *fileSource) files() []string {
	var paths []string
	for _, p := range s.patterns {
		matches, _ := filepath.Glob(p) // the only error, a bad pattern, was refused by newFileSD
		paths = append(paths, matches...)
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// watch watches the directories of the globs, as Prometheus' file_sd does
// (a file replaced by a rename keeps no watch of its own), and calls
// changed once a change in them has settled; it calls watching once the
// directories are watched. A directory that
// cannot be watched is logged and left to the refresh interval.
func (s *fileSource) watch(ctx context.Context, watching, changed func()) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.logger.Warn("Cannot watch file_sd files, reading them every refresh only", "err", err)
		return
	}
	defer func() { _ = w.Close() }()
	for _, dir := range s.dirs() {
		if err := w.Add(dir); err != nil {
			s.logger.Warn("Cannot watch a file_sd directory, reading it every refresh only", "dir", dir, "err", err)
		}
	}
	watching()
	quiet := time.NewTimer(settle)
	quiet.Stop()
	defer quiet.Stop()
	var first time.Time // of the changes not read yet
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			// Any change but a chmod, to any name: a Kubernetes ConfigMap
			// volume updates its files by swapping the symlink ..data.
			if ev.Name == "" || ev.Op == fsnotify.Chmod {
				continue
			}
			if first.IsZero() {
				first = time.Now()
			}
			if time.Since(first) < maxSettle { // a directory that never stays quiet is read anyway
				quiet.Reset(settle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			s.logger.Warn("Watching file_sd files failed", "err", err)
		case <-quiet.C:
			first = time.Time{}
			changed()
		}
	}
}

// dirs returns the directories the globs' files are in; a directory part
// that is itself a glob gives the directories it matches now.
func (s *fileSource) dirs() []string {
	var dirs []string
	for _, p := range s.patterns {
		dir := filepath.Dir(p)
		matches, _ := filepath.Glob(dir)
		if len(matches) == 0 { // not there yet: the Add error says so
			matches = []string{dir}
		}
		dirs = append(dirs, matches...)
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}
