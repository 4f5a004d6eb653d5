package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// maxDocumentSize caps a file_sd file and an http_sd answer: a list of
// target groups this large already names hundreds of thousands of
// replicas.
const maxDocumentSize = 16 << 20

// targetGroup is one entry of Prometheus' file_sd and http_sd format.
type targetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
	lines   []int             // line of each target; nil when unknown (JSON)
}

// yamlTargetGroup is targetGroup as YAML is decoded, keeping each
// target's line for the error messages.
type yamlTargetGroup struct {
	Targets []yaml.Node       `yaml:"targets"`
	Labels  map[string]string `yaml:"labels"`
}

// errEmpty is the cause of a document with nothing in it, which is refused
// so that a file caught halfway through being written keeps the last set.
var errEmpty = errors.New("empty document (write [] for no targets)")

// parseJSON reads a JSON list of target groups from source (a file name or
// a URL, for the errors).
func parseJSON(source string, b []byte) ([]Replica, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s: %w", source, errEmpty)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var groups []targetGroup
	err := dec.Decode(&groups)
	if err == nil {
		if dec.Decode(&json.RawMessage{}) != io.EOF {
			err = errors.New("data after the list of target groups")
		}
	}
	if err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return nil, fmt.Errorf("%s:%d: %w", source, lineAt(b, syntax.Offset), err)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("%s:%d: %w", source, lineAt(b, typ.Offset), err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("%s: truncated JSON: %w", source, err)
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return replicasOf(source, groups)
}

// lineAt is the line of byte offset off in b, counting from 1.
func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// parseYAML reads a YAML list of target groups from source, strictly: an
// unknown key and a second document are errors.
func parseYAML(source string, b []byte) ([]Replica, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: %w", source, errEmpty)
	}
	if top := doc.Content[0]; top.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: want a list of target groups, not %s", source, top.Line, top.ShortTag())
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var groups []yamlTargetGroup
	if err := dec.Decode(&groups); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if err := dec.Decode(&yaml.Node{}); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one YAML document", source)
	}
	plain := make([]targetGroup, len(groups))
	for i, g := range groups {
		plain[i] = targetGroup{Labels: g.Labels, Targets: make([]string, len(g.Targets)), lines: make([]int, len(g.Targets))}
		for j, n := range g.Targets {
			if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
				return nil, fmt.Errorf("%s:%d: target %d of group %d: want a host:port string", source, n.Line, j, i)
			}
			plain[i].Targets[j], plain[i].lines[j] = n.Value, n.Line
		}
	}
	return replicasOf(source, plain)
}

// replicasOf checks the groups and returns their replicas in order.
func replicasOf(source string, groups []targetGroup) ([]Replica, error) {
	var found []Replica
	for i, g := range groups {
		labels, err := checkLabels(g.Labels)
		if err != nil {
			return nil, fmt.Errorf("%s: group %d: %w", source, i, err)
		}
		for j, target := range g.Targets {
			addr, err := checkAddr(target)
			if err != nil {
				where := fmt.Sprintf("%s: group %d", source, i)
				if g.lines != nil {
					where = fmt.Sprintf("%s:%d", source, g.lines[j])
				}
				return nil, fmt.Errorf("%s: target %q: %w", where, target, err)
			}
			found = append(found, Replica{Addr: addr, Labels: labels})
		}
	}
	return found, nil
}

// checkAddr checks a host:port target and returns it in the form
// net.JoinHostPort gives (IPv6 addresses in brackets, the port in
// decimal).
func checkAddr(target string) (string, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		var addrErr *net.AddrError
		if errors.As(err, &addrErr) {
			return "", fmt.Errorf("want host:port: %s", addrErr.Err)
		}
		return "", fmt.Errorf("want host:port: %w", err)
	}
	switch {
	case host == "":
		return "", errors.New("want host:port: empty host")
	case strings.ContainsAny(host, "/?#@[] \t\r\n"):
		return "", fmt.Errorf("want host:port: %q is not a host name or address (no scheme or path)", host)
	case strings.Contains(host, ":") && net.ParseIP(host) == nil:
		return "", fmt.Errorf("want host:port: %q is not an IPv6 address", host)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("want host:port: port %q is not a number from 1 to 65535", port)
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// checkLabels checks a group's labels and returns those the replicas
// carry: names starting with "__" are Prometheus' relabeling inputs
// (__metrics_path__, __scheme__ ...), meaningless to the prober, and are
// left out, so files shared with Prometheus work unchanged.
func checkLabels(labels map[string]string) (map[string]string, error) {
	var kept map[string]string
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		value := labels[name]
		switch {
		case strings.HasPrefix(name, model.ReservedLabelPrefix):
			continue
		case !model.LegacyValidation.IsValidLabelName(name):
			return nil, fmt.Errorf("label name %q is not a valid Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)", name)
		case !utf8.ValidString(value):
			return nil, fmt.Errorf("label %s: value is not valid UTF-8", name)
		}
		if kept == nil {
			kept = map[string]string{}
		}
		kept[name] = value
	}
	return kept, nil
}
