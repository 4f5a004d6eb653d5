package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a yaml.v3 error into an *Error at the line of the
// problem. For most parser errors yaml.v3 reports where the enclosing
// block began (its context), often the parent of a mis-indented key or
// the line before it, so the problem line is found again as the shortest
// prefix of the file that fails with the same message.
func syntaxError(filename string, data []byte, err error) error {
	line, msg := 0, trimYAMLPrefix(err.Error())
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	lines := strings.SplitAfter(string(data), "\n")
	if at := failingLine(lines, max(line, 1), msg); at > 0 {
		line = at
		if why := indentProblem(lines, at, msg); why != "" {
			msg = why
		}
	}
	return &Error{File: filename, Line: line, Msg: "invalid YAML: " + msg}
}

// failingLine returns the first line n >= from such that lines[:n] fails
// to parse with message msg, or 0. Once a prefix reaches the problem,
// every longer one fails there too, so the search halves the range.
func failingLine(lines []string, from int, msg string) int {
	fails := func(n int) bool { return prefixError(strings.Join(lines[:n], "")) == msg }
	lo, hi := from, len(lines)
	if lo > hi || !fails(hi) {
		return 0
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// prefixError returns the message of the first error parsing text as a
// stream of YAML documents, or "".
func prefixError(text string) string {
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				return m[2]
			}
			return trimYAMLPrefix(err.Error())
		}
	}
}

func trimYAMLPrefix(s string) string {
	return strings.TrimPrefix(s, "yaml: ")
}

// blockLine is what the indentation of one line of block YAML says: the
// columns of its list dashes and of its key, if it has one.
type blockLine struct {
	indent int   // column of the first token
	dashes []int // columns of "- " indicators
	key    string
	keyCol int // column of the key; -1 when the line has none
	value  string
}

var (
	blockKey    = regexp.MustCompile(`^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"{\[\]},&*!|>%@` + "`" + `-][^#]*?|-[^\s#][^#]*?)\s*:(?:\s+|$)`)
	blockScalar = regexp.MustCompile(`^[|>][0-9+-]*\s*(?:#.*)?$`)
)

// parseBlockLine reads the block structure of one line; ok is false for
// blank and comment-only lines.
func parseBlockLine(s string) (bl blockLine, ok bool) {
	s = strings.TrimRight(s, "\r\n")
	rest := strings.TrimLeft(s, " ")
	if rest == "" || rest[0] == '#' {
		return bl, false
	}
	bl.indent, bl.keyCol = len(s)-len(rest), -1
	col := bl.indent
	for rest == "-" || strings.HasPrefix(rest, "- ") {
		bl.dashes = append(bl.dashes, col)
		trimmed := strings.TrimLeft(rest[1:], " ")
		col += len(rest) - len(trimmed)
		rest = trimmed
	}
	if m := blockKey.FindStringSubmatch(rest); m != nil {
		bl.key, bl.keyCol = strings.Trim(m[1], `"'`), col
		bl.value = strings.TrimSpace(strings.SplitN(rest[len(m[0]):], " #", 2)[0])
	}
	return bl, true
}

// structure returns the block structure of lines, leaving out blank and
// comment lines and the contents of block scalars (| and >).
func structure(lines []string) map[int]blockLine {
	out := map[int]blockLine{}
	scalarIndent := -1 // lines indented deeper than this belong to a block scalar
	for i, s := range lines {
		bl, ok := parseBlockLine(s)
		if !ok {
			continue
		}
		if scalarIndent >= 0 && bl.indent > scalarIndent {
			continue
		}
		scalarIndent = -1
		if bl.keyCol >= 0 && blockScalar.MatchString(bl.value) {
			scalarIndent = bl.indent
		}
		out[i+1] = bl
	}
	return out
}

// level is a column at which a line may continue a block above it: the
// keys of an open mapping or the dashes of an open list.
type level struct {
	col  int
	key  string // "" for a list's dashes
	line int
}

// openLevels returns the levels open at line at, nearest first: a column
// stays open while no line between is indented less.
func openLevels(st map[int]blockLine, at int) []level {
	var out []level
	seen := map[[2]int]bool{}
	lowest := int(^uint(0) >> 1)
	for i := at - 1; i >= 1; i-- {
		bl, ok := st[i]
		if !ok {
			continue
		}
		add := func(col int, key string) {
			kind := 0
			if key == "" {
				kind = 1
			}
			if col <= lowest && !seen[[2]int{col, kind}] {
				seen[[2]int{col, kind}] = true
				out = append(out, level{col: col, key: key, line: i})
			}
		}
		if bl.keyCol >= 0 {
			add(bl.keyCol, bl.key)
		}
		for j := len(bl.dashes) - 1; j >= 0; j-- {
			add(bl.dashes[j], "")
		}
		lowest = min(lowest, bl.indent)
	}
	return out
}

// indentProblem explains a syntax error at line at as a problem of
// indentation, or returns "" when it is not one.
func indentProblem(lines []string, at int, msg string) string {
	st := structure(lines)
	bl, ok := st[at]
	if !ok || strings.Contains(lines[at-1], "\t") {
		return ""
	}
	switch msg {
	case "mapping values are not allowed in this context":
		return overIndented(st, at, bl)
	case "did not find expected key", "did not find expected '-' indicator":
	default:
		return ""
	}
	col, what := bl.indent, "list item"
	isKey := len(bl.dashes) == 0
	if isKey {
		if bl.keyCol < 0 {
			return ""
		}
		what = "key " + Quote(bl.key)
	}
	if prev, ok := previous(st, at); ok && col > prev.indent && opensBlock(prev) {
		return "" // the first line of a nested block may be indented at will
	}
	var deeper, shallower *level
	for _, l := range openLevels(st, at) {
		if (l.key != "") != isKey {
			continue
		}
		switch {
		case l.col == col:
			return "" // it lines up: the problem is something else
		case l.col > col && (deeper == nil || l.col < deeper.col):
			deeper = &l
		case l.col < col && (shallower == nil || l.col > shallower.col):
			shallower = &l
		}
	}
	var fixes []string
	for _, l := range []*level{deeper, shallower} {
		if l != nil {
			fixes = append(fixes, fmt.Sprintf("%s to align it with %s (line %d)", spaces(l.col), levelName(*l), l.line))
		}
	}
	if len(fixes) == 0 {
		return ""
	}
	return fmt.Sprintf("%s is indented %s, which lines up with nothing above it: indent it %s",
		what, spaces(col), strings.Join(fixes, ", or "))
}

// overIndented explains "mapping values are not allowed": a key indented
// under a key whose value is already on its own line.
func overIndented(st map[int]blockLine, at int, bl blockLine) string {
	if bl.keyCol < 0 {
		return ""
	}
	for i := at - 1; i >= 1; i-- {
		prev, ok := st[i]
		if !ok {
			continue
		}
		if prev.keyCol < 0 || prev.keyCol >= bl.keyCol || prev.value == "" {
			return ""
		}
		return fmt.Sprintf("key %s is indented deeper than %s (line %d), which already has the value %s and cannot hold keys: indent it %s to align it with %s",
			Quote(bl.key), Quote(prev.key), i, Quote(prev.value), spaces(prev.keyCol), Quote(prev.key))
	}
	return ""
}

// previous returns the nearest line above at that holds structure.
func previous(st map[int]blockLine, at int) (blockLine, bool) {
	for i := at - 1; i >= 1; i-- {
		if bl, ok := st[i]; ok {
			return bl, true
		}
	}
	return blockLine{}, false
}

// opensBlock reports whether the lines after bl may start a nested block:
// bl ends in a key without a value or in a bare dash.
func opensBlock(bl blockLine) bool {
	if bl.keyCol >= 0 {
		return bl.value == ""
	}
	return len(bl.dashes) > 0
}

func levelName(l level) string {
	if l.key == "" {
		return "the list item"
	}
	return Quote(l.key)
}

func spaces(n int) string {
	if n == 1 {
		return "1 space"
	}
	return strconv.Itoa(n) + " spaces"
}

// Parse parses the single document of data, the file named filename,
// into a node tree; a nil node means an empty file. A syntax error is an
// *Error at the line of the problem.
func Parse(data []byte, filename string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(filename, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, syntaxError(filename, data, err)
		}
		return nil, &Error{File: filename, Line: extra.Line, Msg: "only one YAML document is allowed"}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}
