package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vllm-prober/vllm-prober/internal/redact"
)

// maxErrors bounds how many problems one load reports, so a badly broken
// file gives a readable message.
const maxErrors = 50

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

// problems collects Errors of one file and remembers the line of every
// field path seen while decoding.
type problems struct {
	file    string
	list    []*Error
	dropped int // problems past the bound of list, counted only
	lines   map[string]int
}

func newProblems(file string) *problems {
	return &problems{file: file, lines: map[string]int{"": 1}}
}

// add records a problem at an explicit line.
func (p *problems) add(line int, path, format string, args ...any) {
	if len(p.list) >= 10*maxErrors {
		p.dropped++
		return
	}
	p.list = append(p.list, &Error{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// fail records a problem at the line of path (or of its closest ancestor
// seen in the file, for a field left to its default).
func (p *problems) fail(path, format string, args ...any) {
	p.add(p.lineOf(path), path, format, args...)
}

// written reports whether path was a key in the file (itself or through
// a merge key), rather than left to its default.
func (p *problems) written(path string) bool {
	_, ok := p.lines[path]
	return ok
}

func (p *problems) lineOf(path string) int {
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

// err returns the problems in file order, joined, or nil.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	slices.SortStableFunc(p.list, func(a, b *Error) int { return a.Line - b.Line })
	list := p.list
	errs := make([]error, 0, min(len(list), maxErrors)+1)
	for i, e := range list {
		if i == maxErrors {
			errs = append(errs, &Error{File: p.file, Msg: fmt.Sprintf("%d more errors not shown", len(list)-maxErrors+p.dropped)})
			break
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// quote formats a string value for a message.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}
