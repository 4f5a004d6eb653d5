package strictyaml

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vllm-prober/vllm-prober/internal/redact"
)

// MaxErrors bounds how many problems one file reports, so a badly broken
// file gives a readable message.
const MaxErrors = 50

// Error is one problem found in a configuration file. Its text is
// "file:line: path: message", for example
// "vllm-prober.yml:12: probes[0].rate: must be > 0, got -1".
type Error struct {
	File string
	Line int    // 1-based; 0 when unknown
	Path string // field path such as probes[0].rate; "" for the whole file
	Msg  string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	// Messages quote values as written; a URL among them may hold a secret.
	return redact.Text(b.String())
}

// Problems collects the Errors of one file, from decoding and from the
// checks that follow it, and remembers the line of every field path seen
// while decoding, so that a check can place its problem.
type Problems struct {
	file    string
	list    []*Error
	dropped int // problems past the bound of list, counted only
	lines   map[string]int
}

// NewProblems returns an empty collection for the file named file.
func NewProblems(file string) *Problems {
	return &Problems{file: file, lines: map[string]int{"": 1}}
}

// Add records a problem at an explicit line.
func (p *Problems) Add(line int, path, format string, args ...any) {
	if len(p.list) >= 10*MaxErrors {
		p.dropped++
		return
	}
	p.list = append(p.list, &Error{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Fail records a problem at the line of path (or of its closest ancestor
// seen in the file, for a field left to its default).
func (p *Problems) Fail(path, format string, args ...any) {
	p.Add(p.LineOf(path), path, format, args...)
}

// Written reports whether path was a key in the file (itself or through
// a merge key), rather than left to its default.
func (p *Problems) Written(path string) bool {
	_, ok := p.lines[path]
	return ok
}

// LineOf returns the line of path, or of its closest ancestor seen in the
// file.
func (p *Problems) LineOf(path string) int {
	for {
		if l, ok := p.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return p.lines[""]
		}
		path = path[:i]
	}
}

// Err returns the problems in file order, joined, or nil.
func (p *Problems) Err() error {
	if len(p.list) == 0 {
		return nil
	}
	slices.SortStableFunc(p.list, func(a, b *Error) int { return a.Line - b.Line })
	list := p.list
	errs := make([]error, 0, min(len(list), MaxErrors)+1)
	for i, e := range list {
		if i == MaxErrors {
			errs = append(errs, &Error{File: p.file, Msg: fmt.Sprintf("%d more errors not shown", len(list)-MaxErrors+p.dropped)})
			break
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// Quote formats a string value for a message: quoted, and cut after 80
// bytes.
func Quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}
